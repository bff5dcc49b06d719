package sqlstore

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Integer columns (Unix-second timestamps, counts, indexes) are declared
// BIGINT, but SQLite keeps whatever another writer stored: Python's
// time.time() is a REAL (1733000000.5), a script may store the number as
// text. Such a value still says which second it means, so it is read,
// truncated toward zero, rather than making the row unreadable; a value
// that is no number (text, NaN, beyond int64) is an error naming it. On
// Postgres and MySQL the column type already refuses or rounds these.

// errNotInteger reports an integer column holding something that is no
// number of int64's range.
var errNotInteger = errors.New("not an integer")

// looseInt64 converts a driver value of an integer column; NULL is 0, !ok.
func looseInt64(src any) (v int64, ok bool, err error) {
	switch x := src.(type) {
	case nil:
		return 0, false, nil
	case int64:
		return x, true, nil
	case int32:
		return int64(x), true, nil
	case int:
		return int64(x), true, nil
	case uint64:
		if x > math.MaxInt64 {
			return 0, false, fmt.Errorf("%w: %d is beyond int64", errNotInteger, x)
		}
		return int64(x), true, nil
	case float64:
		return floatInt64(x)
	case float32:
		return floatInt64(float64(x))
	case []byte:
		return textInt64(string(x))
	case string:
		return textInt64(x)
	case time.Time: // a timestamp column of another type: its second
		return x.Unix(), true, nil
	}
	return 0, false, fmt.Errorf("%w: a %T", errNotInteger, src)
}

// floatInt64 truncates f toward zero; NaN, ±Inf and values beyond int64
// are errors.
func floatInt64(f float64) (int64, bool, error) {
	// -2^63 is an int64; 2^63 is not (float64(math.MaxInt64) rounds up to it).
	if math.IsNaN(f) || f < math.MinInt64 || f >= math.MaxInt64 {
		return 0, false, fmt.Errorf("%w: %v", errNotInteger, f)
	}
	return int64(f), true, nil
}

func textInt64(s string) (int64, bool, error) {
	t := strings.TrimSpace(s)
	if v, err := strconv.ParseInt(t, 10, 64); err == nil {
		return v, true, nil
	}
	// Only decimal notation: ParseFloat also takes "NaN", "Inf" and hex.
	if t != "" && strings.Trim(t, "+-0123456789.eE") == "" {
		if f, err := strconv.ParseFloat(t, 64); err == nil {
			return floatInt64(f)
		}
	}
	return 0, false, fmt.Errorf("%w: %.40q", errNotInteger, s)
}

// intCol scans an integer column into *p (NULL leaves 0) through
// looseInt64. Pointer-shaped, it is boxed for Scan without allocating.
type intCol struct{ p *int64 }

func (c intCol) Scan(src any) error {
	v, _, err := looseInt64(src)
	if err != nil {
		return err
	}
	*c.p = v
	return nil
}

// looseNull is sql.NullInt64 read through looseInt64.
type looseNull struct {
	Int64 int64
	Valid bool
}

func (n *looseNull) Scan(src any) error {
	v, ok, err := looseInt64(src)
	if err != nil {
		return err
	}
	n.Int64, n.Valid = v, ok
	return nil
}

// exactInt64 is a driver value of an integer column as sql.NullInt64
// would scan it; exact is false for a value that is no integer as stored
// (a REAL with or without fraction, text), which a caller comparing keys in
// SQL cannot use as a bound.
func exactInt64(src any) (n sql.NullInt64, exact bool) {
	switch x := src.(type) {
	case nil, int64, int32, int:
		if err := n.Scan(x); err != nil {
			return n, false
		}
		return n, true
	case []byte: // MySQL's text protocol
		v, err := strconv.ParseInt(string(x), 10, 64)
		return sql.NullInt64{Int64: v, Valid: true}, err == nil
	}
	return n, false
}
