package tool

import (
	"bytes"
	"encoding/json"
	"strconv"
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
