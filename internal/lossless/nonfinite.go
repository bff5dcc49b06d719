package lossless

import (
	"bytes"
	"encoding/json"
)

// WithoutNonFinite returns the JSON text b with the words Python's json
// module writes for floats that are not finite (NaN, Infinity, -Infinity),
// outside strings, replaced by null, and whether that made it valid JSON
// (false, with b, when it held none). Agno's SQLite writer stores them so:
// one such float (a metric divided by zero) made a whole row unreadable.
func WithoutNonFinite(b []byte) ([]byte, bool) {
	var out []byte
	last := 0 // b[last:i] is not copied yet
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = skipString(b, i) - 1
		case 'N', 'I', '-':
			for _, w := range nonFinite {
				if bytes.HasPrefix(b[i:], w) {
					out = append(append(out, b[last:i]...), "null"...)
					i += len(w) - 1
					last = i + 1
					break
				}
			}
		}
	}
	if out == nil {
		return b, false
	}
	out = append(out, b[last:]...)
	return out, json.Valid(out)
}

// nonFinite are Python json's words for NaN and the infinities.
var nonFinite = [][]byte{[]byte("NaN"), []byte("Infinity"), []byte("-Infinity")}
