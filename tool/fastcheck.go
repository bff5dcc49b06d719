package tool

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// fastSchema is a parameter schema restricted to the keywords inferred tool
// schemas use (type, properties, required, additionalProperties, items, enum,
// length and item-count bounds). It checks raw argument bytes in one pass
// without building a document. It only ever answers "certainly valid": any
// doubt (a violation, an escaped string under a constraint, a number whose
// integer-ness needs arithmetic, deep nesting) sends the arguments to the full
// validator, which decides and writes the message the model sees. So the fast
// path cannot change what is accepted or how a rejection reads.
type fastSchema struct {
	types uint8 // fastT* bits; 0 accepts any type
	enum  []fastEnum

	names    []string      // properties first, then required names not in properties
	props    []*fastSchema // per name; nil accepts anything
	nprops   int           // len of the properties part of names
	required uint64        // bit i: names[i] is required
	closed   bool          // additionalProperties: false
	extra    *fastSchema   // additionalProperties as a schema (nil: anything, unless closed)

	items              *fastSchema
	minItems, maxItems int // -1: no bound
	minLen, maxLen     int // -1: no bound
	// Integer bounds; a number that is not an integer literal in int64 range
	// takes the full validator when a bound is set.
	min, max       int64
	hasMin, hasMax bool
}

const (
	fastTNull uint8 = 1 << iota
	fastTBool
	fastTInt
	fastTNum // number includes integer
	fastTString
	fastTArray
	fastTObject
)

// fastEnum is one enum value as JSON text: a string's decoded text, or the
// literal text of a number (integers only), boolean or null.
type fastEnum struct {
	str    bool
	text   string
	number bool
}

// maxFastDepth bounds nesting on the fast path; deeper arguments take the
// full validator (and the fast path never recurses deeply).
const maxFastDepth = 32

// compileFast builds a fastSchema from a tool's parameters, or returns nil
// when the schema uses anything the fast path does not understand.
func compileFast(params json.RawMessage) *fastSchema {
	if len(bytes.TrimSpace(params)) == 0 {
		return &fastSchema{types: fastTObject, minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil
	}
	s, ok := compileFastNode(doc, 0)
	if !ok || s == nil {
		return nil
	}
	return s
}

func compileFastNode(doc any, depth int) (*fastSchema, bool) {
	if depth > maxFastDepth {
		return nil, false
	}
	if b, ok := doc.(bool); ok {
		if b {
			return nil, true // true accepts anything
		}
		return nil, false
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, false
	}
	s := &fastSchema{minItems: -1, maxItems: -1, minLen: -1, maxLen: -1}
	var required []string
	for k, v := range m {
		switch k {
		case "description", "title", "default", "examples", "$comment":
		case "type":
			t, ok := fastTypes(v)
			if !ok {
				return nil, false
			}
			s.types = t
		case "enum":
			vals, ok := v.([]any)
			if !ok {
				return nil, false
			}
			s.enum = make([]fastEnum, 0, len(vals))
			for _, e := range vals {
				switch e := e.(type) {
				case string:
					s.enum = append(s.enum, fastEnum{str: true, text: e})
				case json.Number:
					if _, err := strconv.ParseInt(string(e), 10, 64); err != nil {
						return nil, false // only canonical integers compare as text
					}
					s.enum = append(s.enum, fastEnum{number: true, text: string(e)})
				case bool:
					s.enum = append(s.enum, fastEnum{text: strconv.FormatBool(e)})
				case nil:
					s.enum = append(s.enum, fastEnum{text: "null"})
				default:
					return nil, false
				}
			}
		case "properties":
			pm, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			for name, ps := range pm {
				c, ok := compileFastNode(ps, depth+1)
				if !ok {
					return nil, false
				}
				s.names = append(s.names, name)
				s.props = append(s.props, c)
			}
		case "required":
			rs, ok := v.([]any)
			if !ok {
				return nil, false
			}
			for _, r := range rs {
				name, ok := r.(string)
				if !ok {
					return nil, false
				}
				required = append(required, name)
			}
		case "additionalProperties":
			if b, ok := v.(bool); ok {
				s.closed = !b
				continue
			}
			c, ok := compileFastNode(v, depth+1)
			if !ok {
				return nil, false
			}
			s.extra = c
		case "items":
			c, ok := compileFastNode(v, depth+1)
			if !ok {
				return nil, false
			}
			s.items = c
		case "minimum", "maximum":
			n, ok := v.(json.Number)
			if !ok {
				return nil, false
			}
			i, err := strconv.ParseInt(string(n), 10, 64)
			if err != nil {
				return nil, false
			}
			if k == "minimum" {
				s.min, s.hasMin = i, true
			} else {
				s.max, s.hasMax = i, true
			}
		case "minItems", "maxItems", "minLength", "maxLength":
			n, ok := v.(json.Number)
			if !ok {
				return nil, false
			}
			i, err := strconv.ParseInt(string(n), 10, 32)
			if err != nil || i < 0 {
				return nil, false
			}
			switch k {
			case "minItems":
				s.minItems = int(i)
			case "maxItems":
				s.maxItems = int(i)
			case "minLength":
				s.minLen = int(i)
			case "maxLength":
				s.maxLen = int(i)
			}
		default:
			return nil, false // $schema, $ref, pattern, format, exclusiveMinimum, oneOf...
		}
	}
	s.nprops = len(s.names)
	for _, r := range required {
		i := s.nameIndex(r)
		if i < 0 {
			s.names = append(s.names, r)
			s.props = append(s.props, nil)
			i = len(s.names) - 1
		}
		if i >= 64 {
			return nil, false
		}
		s.required |= 1 << i
	}
	return s, true
}

func fastTypes(v any) (uint8, bool) {
	one := func(name string) (uint8, bool) {
		switch name {
		case "null":
			return fastTNull, true
		case "boolean":
			return fastTBool, true
		case "integer":
			return fastTInt, true
		case "number":
			return fastTNum, true
		case "string":
			return fastTString, true
		case "array":
			return fastTArray, true
		case "object":
			return fastTObject, true
		}
		return 0, false
	}
	switch v := v.(type) {
	case string:
		return one(v)
	case []any:
		var t uint8
		for _, e := range v {
			name, ok := e.(string)
			if !ok {
				return 0, false
			}
			b, ok := one(name)
			if !ok {
				return 0, false
			}
			t |= b
		}
		if t == 0 {
			return 0, false
		}
		return t, true
	}
	return 0, false
}

func (s *fastSchema) nameIndex(name string) int {
	for i, n := range s.names {
		if n == name {
			return i
		}
	}
	return -1
}

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
