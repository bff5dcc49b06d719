package migrate

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"hash"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// contentDigest identifies a run_data value up to what a database changes
// when it stores JSON (Postgres JSONB and MySQL JSON reorder keys, drop
// spacing, rewrite escapes and numbers): two texts sameJSON calls equal have
// the same digest. The copy records it for each row it writes, so a later
// Up can tell a row Agentry rewrote within the second the copy stamped it
// (same updated_at) from the row as copied.
func contentDigest(b []byte) int64 {
	h := sha256.New()
	if u, _, err := unwrapLayers(b); err == nil {
		b = u
	}
	if v, ok := decodeNumbers(b); ok {
		h.Write([]byte{'j'})
		writeCanonical(h, v)
	} else {
		h.Write([]byte{'r'})
		h.Write(b)
	}
	var s [sha256.Size]byte
	return int64(binary.BigEndian.Uint64(h.Sum(s[:0])[:8]))
}

// writeCanonical writes a decoded JSON value unambiguously: object keys
// sorted, strings length-prefixed, numbers by value (canonicalNumber).
func writeCanonical(h hash.Hash, v any) {
	var n [binary.MaxVarintLen64]byte
	str := func(tag byte, s string) {
		h.Write([]byte{tag})
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		h.Write([]byte{'{'})
		for _, k := range keys {
			str('k', k)
			writeCanonical(h, x[k])
		}
		h.Write([]byte{'}'})
	case []any:
		h.Write([]byte{'['})
		for _, e := range x {
			writeCanonical(h, e)
		}
		h.Write([]byte{']'})
	case json.Number:
		str('n', canonicalNumber(string(x)))
	case string:
		str('s', x)
	case bool:
		if x {
			h.Write([]byte{'t'})
		} else {
			h.Write([]byte{'f'})
		}
	default: // nil
		h.Write([]byte{'z'})
	}
}

// canonicalNumber renders a JSON number so that two numbers render alike
// exactly when their values are equal: significant digits without leading
// or trailing zeros and a decimal exponent ("-15e1" for -1.50E2, "0" for
// every zero). The exponent is exact at any size (big.Int beyond int), so
// equalJSON compares numbers by it, with no limit and no big.Rat of
// 10^exponent to build. s must be a valid JSON number.
func canonicalNumber(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	mant, expText := s, ""
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant, expText = s[:i], strings.TrimPrefix(s[i+1:], "+")
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := strings.TrimLeft(intPart+frac, "0")
	if digits == "" {
		return "0"
	}
	trimmed := strings.TrimRight(digits, "0")
	shift := int64(len(digits) - len(trimmed) - len(frac)) // |shift| ≤ len(s)
	if expText == "" {
		return sign + trimmed + "e" + strconv.FormatInt(shift, 10)
	}
	if e, err := strconv.ParseInt(expText, 10, 64); err == nil && e < 1<<62 && e > -(1<<62) {
		return sign + trimmed + "e" + strconv.FormatInt(e+shift, 10)
	}
	e, ok := new(big.Int).SetString(expText, 10)
	if !ok { // not a JSON number's exponent (a decoded json.Number always has one)
		return sign + s
	}
	return sign + trimmed + "e" + e.Add(e, big.NewInt(shift)).String()
}
