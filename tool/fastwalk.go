package tool

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// The fast check's walk over the raw argument bytes against a compiled
// fastSchema (fastschema.go): one pass, no allocation, "certainly valid" or
// "ask the full validator".

// accepts reports whether args are certainly one valid JSON value (surrounded
// by whitespace only) that satisfies s. False means "ask the full validator".
func (s *fastSchema) accepts(args []byte) bool {
	w := fastWalker{b: args}
	w.ws()
	if !w.value(s, 0) {
		return false
	}
	w.ws()
	return w.i == len(w.b)
}

type fastWalker struct {
	b []byte
	i int
}

func (w *fastWalker) ws() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\n', '\r':
			w.i++
		default:
			return
		}
	}
}

func (s *fastSchema) allows(t uint8) bool {
	if s == nil || s.types == 0 {
		return true
	}
	if t == fastTInt && s.types&fastTNum != 0 {
		return true
	}
	return s.types&t != 0
}

// value checks one value at w.i against s (nil: any valid JSON).
func (w *fastWalker) value(s *fastSchema, depth int) bool {
	if depth > maxFastDepth || w.i >= len(w.b) {
		return false
	}
	switch c := w.b[w.i]; {
	case c == '{':
		return s.allows(fastTObject) && (s == nil || s.enum == nil) && w.object(s, depth)
	case c == '[':
		return s.allows(fastTArray) && (s == nil || s.enum == nil) && w.array(s, depth)
	case c == '"':
		start := w.i
		plain, ok := w.str()
		if !ok || !s.allows(fastTString) {
			return false
		}
		if s == nil || (s.enum == nil && s.minLen < 0 && s.maxLen < 0) {
			return true
		}
		if !plain {
			return false // escapes or non-ASCII: let the full validator decode it
		}
		text := w.b[start+1 : w.i-1]
		if s.minLen >= 0 && utf8.RuneCount(text) < s.minLen || s.maxLen >= 0 && utf8.RuneCount(text) > s.maxLen {
			return false
		}
		return s.enum == nil || s.inEnum(text, true)
	case c == 't' || c == 'f' || c == 'n':
		start := w.i
		t := fastTBool
		switch {
		case bytes.HasPrefix(w.b[w.i:], []byte("true")):
			w.i += 4
		case bytes.HasPrefix(w.b[w.i:], []byte("false")):
			w.i += 5
		case bytes.HasPrefix(w.b[w.i:], []byte("null")):
			w.i += 4
			t = fastTNull
		default:
			return false
		}
		return s.allows(t) && (s == nil || s.enum == nil || s.inEnum(w.b[start:w.i], false))
	case c == '-' || '0' <= c && c <= '9':
		start := w.i
		integer, ok := w.number()
		if !ok {
			return false
		}
		if integer {
			if !s.allows(fastTInt) {
				return false
			}
		} else if s != nil && s.types != 0 && s.types&fastTNum == 0 {
			return false // 3.0 is an integer to JSON Schema: let the full validator say
		}
		if s != nil && (s.hasMin || s.hasMax) {
			if !integer {
				return false
			}
			n, err := strconv.ParseInt(string(w.b[start:w.i]), 10, 64)
			if err != nil || s.hasMin && n < s.min || s.hasMax && n > s.max {
				return false
			}
		}
		return s == nil || s.enum == nil || integer && s.inEnum(w.b[start:w.i], false)
	}
	return false
}

func (s *fastSchema) inEnum(text []byte, str bool) bool {
	for _, e := range s.enum {
		if e.str == str && e.text == string(text) {
			return true
		}
	}
	return false
}

func (w *fastWalker) object(s *fastSchema, depth int) bool {
	w.i++ // {
	var seen uint64
	w.ws()
	if w.i < len(w.b) && w.b[w.i] == '}' {
		w.i++
		return s == nil || s.required == 0
	}
	for {
		w.ws()
		if w.i >= len(w.b) || w.b[w.i] != '"' {
			return false
		}
		start := w.i
		plain, ok := w.str()
		if !ok || !plain && s != nil && (len(s.names) > 0 || s.closed || s.extra != nil) {
			return false // an escaped key could name a property: decide slowly
		}
		key := w.b[start+1 : w.i-1]
		w.ws()
		if w.i >= len(w.b) || w.b[w.i] != ':' {
			return false
		}
		w.i++
		w.ws()
		var sub *fastSchema
		if s != nil {
			j := -1
			for n := 0; n < s.nprops; n++ {
				if s.names[n] == string(key) {
					j = n
					break
				}
			}
			switch {
			case j >= 0:
				sub = s.props[j]
			case s.closed:
				return false
			default:
				sub = s.extra
			}
			if j < 0 {
				// A required name outside properties is still counted.
				if k := s.nameIndex(string(key)); k >= 0 {
					j = k
				}
			}
			if j >= 0 && j < 64 {
				seen |= 1 << j
			}
		}
		if !w.value(sub, depth+1) {
			return false
		}
		w.ws()
		if w.i >= len(w.b) {
			return false
		}
		switch w.b[w.i] {
		case ',':
			w.i++
		case '}':
			w.i++
			return s == nil || seen&s.required == s.required
		default:
			return false
		}
	}
}

func (w *fastWalker) array(s *fastSchema, depth int) bool {
	w.i++ // [
	var items *fastSchema
	if s != nil {
		items = s.items
	}
	n := 0
	w.ws()
	if w.i < len(w.b) && w.b[w.i] == ']' {
		w.i++
	} else {
		for {
			w.ws()
			if !w.value(items, depth+1) {
				return false
			}
			n++
			w.ws()
			if w.i >= len(w.b) {
				return false
			}
			if w.b[w.i] == ']' {
				w.i++
				break
			}
			if w.b[w.i] != ',' {
				return false
			}
			w.i++
		}
	}
	return s == nil || (s.minItems < 0 || n >= s.minItems) && (s.maxItems < 0 || n <= s.maxItems)
}

// str scans a string at w.i (the opening quote), checking JSON's escape and
// control-character rules. plain means printable ASCII without escapes, whose
// decoded text is the raw bytes.
func (w *fastWalker) str() (plain, ok bool) {
	w.i++
	plain = true
	for w.i < len(w.b) {
		c := w.b[w.i]
		switch {
		case c == '"':
			w.i++
			return plain, true
		case c < 0x20:
			return false, false
		case c == '\\':
			plain = false
			w.i++
			if w.i >= len(w.b) {
				return false, false
			}
			switch w.b[w.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				w.i++
			case 'u':
				if w.i+4 >= len(w.b) {
					return false, false
				}
				for _, h := range w.b[w.i+1 : w.i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false, false
					}
				}
				w.i += 5
			default:
				return false, false
			}
		case c >= 0x80:
			plain = false
			w.i++
		default:
			w.i++
		}
	}
	return false, false
}

// number scans a JSON number; integer means no fraction and no exponent.
func (w *fastWalker) number() (integer, ok bool) {
	b := w.b
	if b[w.i] == '-' {
		w.i++
	}
	digits := func() int {
		n := 0
		for w.i < len(b) && '0' <= b[w.i] && b[w.i] <= '9' {
			w.i++
			n++
		}
		return n
	}
	if w.i >= len(b) {
		return false, false
	}
	if b[w.i] == '0' {
		w.i++
	} else if digits() == 0 {
		return false, false
	}
	integer = true
	if w.i < len(b) && b[w.i] == '.' {
		w.i++
		integer = false
		if digits() == 0 {
			return false, false
		}
	}
	if w.i < len(b) && (b[w.i] == 'e' || b[w.i] == 'E') {
		w.i++
		integer = false
		if w.i < len(b) && (b[w.i] == '+' || b[w.i] == '-') {
			w.i++
		}
		if digits() == 0 {
			return false, false
		}
	}
	return integer, true
}
