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
	if len(w.Rows) == 0 {
		// The column names and the framing count against the budget.
		b, _ := json.Marshal(w.Columns)
		w.size = len(b) + len(`{"columns":,"rows":[[]],"truncated":true}`)
	}
	row := make([]any, len(vals))
	n := 0
	for i, v := range vals {
		row[i] = cell(v)
		n += jsonLen(row[i]) + 1
	}
	if w.size+n > w.maxBytes {
		w.Truncated = true
		if len(w.Rows) > 0 {
			return false
		}
		// The first row alone is over the budget (each cell is capped, but
		// a row may have thousands): each cell gets an equal share of it,
		// so the model still sees every column's start.
		n = fitCells(row, (w.maxBytes-w.size)/max(len(row), 1)-1)
	}
	w.size += n
	w.Rows = append(w.Rows, row)
	return true
}

// jsonLen is the length of v's JSON encoding.
func jsonLen(v any) int {
	b, _ := json.Marshal(v)
	return len(b)
}

// fitCells cuts the cells of row whose JSON is longer than share bytes
// to text of at most that length (at least its first character and the
// note of what was cut); it returns the row's new length as counted by add.
func fitCells(row []any, share int) int {
	n := 0
	for i, c := range row {
		if l := jsonLen(c); l > share {
			text, ok := c.(string)
			if !ok {
				text = fmt.Sprint(c)
				if raw, isRaw := c.(json.RawMessage); isRaw {
					text = string(raw)
				}
			}
			row[i] = cutText(text, share)
		}
		n += jsonLen(row[i]) + 1
	}
	return n
}

// cutText is s cut, with the note of how much, so that its JSON takes at
// most share bytes where it can: the note and one character are kept.
func cutText(s string, share int) string {
	keep := share
	for {
		out, _ := tool.Truncate(s, max(keep, 1))
		t := fmt.Sprintf("%s…[%d more bytes]", out, len(s)-len(out))
		if keep <= 1 || jsonLen(t) <= share {
			return t
		}
		keep -= max(jsonLen(t)-share, 1)
	}
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
