package migrate

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Fast paths over JSON already known to be valid: splitting an array into its
// elements and picking top-level fields of an object without decoding the rest.
// The copy reads every byte of every legacy run; encoding/json would scan each
// several times.

var errBadString = errors.New("invalid JSON string")

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		i += j
		n := 0
		for k := i - 1; k >= 0 && b[k] == '\\'; k-- {
			n++
		}
		i++
		if n%2 == 0 {
			return i
		}
	}
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && !isSpace(b[i]) {
		i++
	}
	return i
}

// splitArray returns the elements of a valid JSON array as sub-slices.
func splitArray(b []byte) []json.RawMessage {
	var out []json.RawMessage
	i := skipSpace(b, 1)
	for i < len(b) && b[i] != ']' {
		end := skipValue(b, i)
		out = append(out, json.RawMessage(b[i:end]))
		i = skipSpace(b, end)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	return out
}

// eachField calls fn with every top-level key (raw, unescaped only if it had
// no escapes) and value of a valid JSON object.
func eachField(b []byte, fn func(key string, val []byte)) {
	i := skipSpace(b, 1)
	for i < len(b) && b[i] == '"' {
		kEnd := skipString(b, i)
		key := b[i+1 : kEnd-1]
		i = skipSpace(b, kEnd)
		i = skipSpace(b, i+1) // ':'
		vEnd := skipValue(b, i)
		fn(string(key), b[i:vEnd])
		i = skipSpace(b, vEnd)
		if i < len(b) && b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
}

// unquote decodes one JSON string literal (b[0] == '"'), failing on anything
// a JSON string may not hold.
func unquote(b []byte) ([]byte, error) {
	if len(b) < 2 || b[len(b)-1] != '"' {
		return nil, errBadString
	}
	s := b[1 : len(b)-1]
	if bytes.IndexByte(s, '\\') < 0 {
		for _, c := range s {
			if c < 0x20 || c == '"' {
				return nil, errBadString
			}
		}
		return s, nil
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c < 0x20:
			return nil, errBadString
		case c != '\\':
			j := i + 1
			for j < len(s) && s[j] != '\\' && s[j] != '"' && s[j] >= 0x20 {
				j++
			}
			out = append(out, s[i:j]...)
			i = j
			continue
		}
		if i+1 >= len(s) {
			return nil, errBadString
		}
		switch s[i+1] {
		case '"', '\\', '/':
			out = append(out, s[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, n := hex4(s[i+2:])
			if n < 0 {
				return nil, errBadString
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2, n2 := hex4(s[min(i+2, len(s)):]); n2 > 0 && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
						i += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return nil, errBadString
		}
		i += 2
	}
	return out, nil
}

func hex4(b []byte) (rune, int) {
	if len(b) < 4 {
		return 0, -1
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 32)
	if err != nil {
		return 0, -1
	}
	return rune(v), 4
}
