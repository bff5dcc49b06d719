package sqltools

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"time"
	"unicode/utf8"

	"github.com/agentryhq/agentry/tool"
)

// resultWriter collects rows up to a row and byte budget.
type resultWriter struct {
	limit, maxBytes int
	size            int
	Columns         []string `json:"columns,omitempty"`
	Rows            [][]any  `json:"rows,omitempty"`
	RowsAffected    *int64   `json:"rows_affected,omitempty"`
	Truncated       bool     `json:"truncated,omitempty"`
}

func newResultWriter(limit, maxBytes int) *resultWriter {
	return &resultWriter{limit: limit, maxBytes: maxBytes}
}

// add appends a row; it returns false once no more rows are wanted.
func (w *resultWriter) add(vals []any) bool {
	if len(w.Rows) >= w.limit {
		w.Truncated = true
		return false
	}
	row := make([]any, len(vals))
	n := 0
	for i, v := range vals {
		row[i] = cell(v)
		b, _ := json.Marshal(row[i])
		n += len(b) + 1
	}
	if w.size+n > w.maxBytes && len(w.Rows) > 0 {
		w.Truncated = true
		return false
	}
	w.size += n
	w.Rows = append(w.Rows, row)
	return true
}

func (w *resultWriter) affected(n int64) { w.RowsAffected = &n }

func (w *resultWriter) json() (json.RawMessage, error) {
	if w.Columns != nil && w.Rows == nil {
		w.Rows = [][]any{}
	}
	return json.Marshal(w)
}

// cell turns a driver value into something JSON shows faithfully and briefly.
func cell(v any) any {
	switch x := v.(type) {
	case nil, bool, int64, int32, int16, int8, int, uint64, uint32, uint16, uint8:
		return x
	case float64:
		return float(x)
	case float32:
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return float(float64(x))
		}
		return x
	case string:
		return capText(x)
	case []byte:
		if utf8.Valid(x) {
			return capText(string(x))
		}
		return fmt.Sprintf("<%d bytes of binary data>", len(x))
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case [16]byte: // Postgres uuid
		h := hex.EncodeToString(x[:])
		return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
	case *big.Int:
		return x.String()
	case json.Marshaler:
		if b, err := x.MarshalJSON(); err == nil && len(b) <= maxCellBytes {
			return json.RawMessage(b)
		}
		return capText(fmt.Sprint(x))
	case map[string]any, []any:
		if b, err := json.Marshal(x); err == nil && len(b) <= maxCellBytes {
			return json.RawMessage(b)
		}
		return capText(fmt.Sprint(x))
	}
	return capText(fmt.Sprint(v))
}

// float is x, or for a value JSON has no number for (NaN, ±Inf, which
// json.Marshal refuses, failing the whole answer) its name as Postgres
// spells it.
func float(x float64) any {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	}
	return x
}

func capText(s string) string {
	out, cut := tool.Truncate(s, maxCellBytes)
	if cut {
		return fmt.Sprintf("%s…[%d more bytes]", out, len(s)-len(out))
	}
	return out
}
