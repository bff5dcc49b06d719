package tool

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// argDecoder decodes argument text the fast check accepted straight into a
// Func tool's argument struct, in one pass and without copying strings (they
// share the argument text, which is immutable). It covers the plain shapes
// inferred schemas come from — structs of strings, booleans, integers,
// floats, nested structs, and slices of and pointers to those — and gives up
// (ok=false) on anything else it meets: an escaped or invalid UTF-8 string,
// a number that does not parse for its field, a key that is not exactly a field's
// name. The caller then decodes with encoding/json from scratch, which
// decides the result and any error, so the outcome is always encoding/json's.
type argDecoder struct {
	kind   reflect.Kind
	typ    reflect.Type
	fields []argField  // struct (at most 64)
	elem   *argDecoder // slice
	bits   int         // int, uint and float sizes
}

type argField struct {
	name string
	off  uintptr
	dec  *argDecoder
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// newArgDecoder returns the decoder of t, or nil when t (or a type inside
// it) needs encoding/json: maps, interfaces, arrays, []byte,
// embedded structs, `string` tag options, custom unmarshalers, unusual tag
// names or clashing names.
func newArgDecoder(t reflect.Type) *argDecoder {
	if t.Kind() != reflect.Struct {
		return nil
	}
	return buildArgDecoder(t, map[reflect.Type]bool{})
}

// buildArgDecoder compiles t; building holds the types being compiled, so a
// recursive type gives up instead of recursing forever.
func buildArgDecoder(t reflect.Type, building map[reflect.Type]bool) *argDecoder {
	if building[t] || t.Implements(jsonUnmarshaler) || t.Implements(textUnmarshaler) ||
		reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	building[t] = true
	defer delete(building, t)
	d := &argDecoder{kind: t.Kind(), typ: t}
	switch t.Kind() {
	case reflect.Bool, reflect.String:
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		d.bits = t.Bits()
	case reflect.Pointer:
		if d.elem = buildArgDecoder(t.Elem(), building); d.elem == nil {
			return nil
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return nil // []byte is base64 text to encoding/json
		}
		if d.elem = buildArgDecoder(t.Elem(), building); d.elem == nil {
			return nil
		}
	case reflect.Struct:
		seen := map[string]bool{}
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				return nil // embedded fields follow encoding/json's promotion rules
			}
			if !f.IsExported() {
				continue
			}
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if strings.Contains(","+opts+",", ",string,") {
				return nil
			}
			if name == "" {
				name = f.Name
			}
			if !plainName(name) || seen[strings.ToLower(name)] {
				return nil // encoding/json's tag and case-folding rules decide
			}
			seen[strings.ToLower(name)] = true
			fd := buildArgDecoder(f.Type, building)
			if fd == nil || len(d.fields) == 64 {
				return nil
			}
			d.fields = append(d.fields, argField{name: name, off: f.Offset, dec: fd})
		}
	default:
		return nil
	}
	return d
}

func plainName(s string) bool {
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return s != ""
}

// decode fills the zero value at p (of d's type) from args, one JSON value
// with surrounding whitespace. False means: decode with encoding/json instead
// (the value at p may be partly filled and must be discarded).
func (d *argDecoder) decode(p unsafe.Pointer, args string) bool {
	r := argReader{s: args}
	r.ws()
	if !r.value(d, p) {
		return false
	}
	r.ws()
	return r.i == len(r.s)
}

type argReader struct {
	s string
	i int
}

func (r *argReader) ws() {
	for r.i < len(r.s) {
		switch r.s[r.i] {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return
		}
	}
}

// value decodes the value at r.i into p.
func (r *argReader) value(d *argDecoder, p unsafe.Pointer) bool {
	if r.i >= len(r.s) {
		return false
	}
	c := r.s[r.i]
	if c == 'n' && strings.HasPrefix(r.s[r.i:], "null") {
		// encoding/json leaves a value alone on null, or sets a pointer or
		// slice to nil: the same here, where every field and element starts
		// zero and is decoded at most once.
		r.i += 4
		return true
	}
	switch d.kind {
	case reflect.Pointer:
		v := reflect.New(d.typ.Elem()).UnsafePointer()
		if !r.value(d.elem, v) {
			return false
		}
		*(*unsafe.Pointer)(p) = v
		return true
	case reflect.Struct:
		return c == '{' && r.object(d, p)
	case reflect.Slice:
		return c == '[' && r.array(d, p)
	case reflect.String:
		s, ok := r.str()
		if ok {
			*(*string)(p) = s
		}
		return ok
	case reflect.Bool:
		switch {
		case strings.HasPrefix(r.s[r.i:], "true"):
			*(*bool)(p) = true
			r.i += 4
		case strings.HasPrefix(r.s[r.i:], "false"):
			*(*bool)(p) = false
			r.i += 5
		default:
			return false
		}
		return true
	}
	num, ok := r.number()
	if !ok {
		return false
	}
	switch d.kind {
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(num, d.bits)
		if err != nil {
			return false
		}
		if d.kind == reflect.Float32 {
			*(*float32)(p) = float32(f)
		} else {
			*(*float64)(p) = f
		}
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(num, 10, d.bits)
		if err != nil {
			return false
		}
		storeBits(p, d.bits, uint64(n))
		return true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(num, 10, d.bits)
		if err != nil {
			return false
		}
		storeBits(p, d.bits, n)
		return true
	}
	return false
}

// storeBits stores the low bits bits of n at p: an integer of that width,
// signed or not (a signed value parsed to fit its width has the same low
// bits as its two's complement in a uint64).
func storeBits(p unsafe.Pointer, bits int, n uint64) {
	switch bits {
	case 8:
		*(*uint8)(p) = uint8(n)
	case 16:
		*(*uint16)(p) = uint16(n)
	case 32:
		*(*uint32)(p) = uint32(n)
	default:
		*(*uint64)(p) = n
	}
}

func (r *argReader) object(d *argDecoder, p unsafe.Pointer) bool {
	r.i++ // {
	var seen uint64
	r.ws()
	if r.i < len(r.s) && r.s[r.i] == '}' {
		r.i++
		return true
	}
	for {
		r.ws()
		if r.i >= len(r.s) || r.s[r.i] != '"' {
			return false
		}
		key, ok := r.str()
		if !ok {
			return false
		}
		var f *argField
		for j := range d.fields {
			if d.fields[j].name == key {
				f = &d.fields[j]
				if seen&(1<<j) != 0 {
					return false // a repeated key merges into the first value's
				}
				seen |= 1 << j
				break
			}
		}
		if f == nil {
			return false // unknown, or a case-folded match: encoding/json's rules
		}
		r.ws()
		if r.i >= len(r.s) || r.s[r.i] != ':' {
			return false
		}
		r.i++
		r.ws()
		if !r.value(f.dec, unsafe.Add(p, f.off)) {
			return false
		}
		r.ws()
		if r.i >= len(r.s) {
			return false
		}
		switch r.s[r.i] {
		case ',':
			r.i++
		case '}':
			r.i++
			return true
		default:
			return false
		}
	}
}

// array decodes into the slice at p, as encoding/json does into a nil slice:
// a new slice of the elements ([] gives an empty, non-nil slice).
func (r *argReader) array(d *argDecoder, p unsafe.Pointer) bool {
	r.i++ // [
	v := reflect.MakeSlice(d.typ, 0, 0)
	r.ws()
	if r.i < len(r.s) && r.s[r.i] == ']' {
		r.i++
		setSlice(p, v)
		return true
	}
	zero := reflect.Zero(d.typ.Elem())
	for n := 0; ; n++ {
		r.ws()
		v = reflect.Append(v, zero)
		if !r.value(d.elem, v.Index(n).Addr().UnsafePointer()) {
			return false
		}
		r.ws()
		if r.i >= len(r.s) {
			return false
		}
		if r.s[r.i] == ']' {
			r.i++
			setSlice(p, v)
			return true
		}
		if r.s[r.i] != ',' {
			return false
		}
		r.i++
	}
}

// setSlice stores slice v at p (a slice of v's type), without handing p to
// reflect so that the decoded value can stay on its caller's stack.
func setSlice(p unsafe.Pointer, v reflect.Value) {
	*(*sliceHeader)(p) = sliceHeader{data: v.UnsafePointer(), len: v.Len(), cap: v.Cap()}
}

type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// str reads a string at r.i (the opening quote) and returns its text when it
// equals the raw bytes: no escapes, no control characters, valid UTF-8.
func (r *argReader) str() (string, bool) {
	if r.i >= len(r.s) || r.s[r.i] != '"' {
		return "", false
	}
	start := r.i + 1
	ascii := true
	for j := start; j < len(r.s); j++ {
		switch c := r.s[j]; {
		case c == '"':
			text := r.s[start:j]
			if !ascii && !utf8.ValidString(text) {
				return "", false // encoding/json replaces invalid bytes
			}
			r.i = j + 1
			return text, true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= 0x80:
			ascii = false
		}
	}
	return "", false
}

// number reads a JSON number's text.
func (r *argReader) number() (string, bool) {
	start := r.i
	s := r.s
	if r.i < len(s) && s[r.i] == '-' {
		r.i++
	}
	digits := func() int {
		n := 0
		for r.i < len(s) && '0' <= s[r.i] && s[r.i] <= '9' {
			r.i++
			n++
		}
		return n
	}
	if r.i >= len(s) {
		return "", false
	}
	if s[r.i] == '0' {
		r.i++
	} else if digits() == 0 {
		return "", false
	}
	if r.i < len(s) && s[r.i] == '.' {
		r.i++
		if digits() == 0 {
			return "", false
		}
	}
	if r.i < len(s) && (s[r.i] == 'e' || s[r.i] == 'E') {
		r.i++
		if r.i < len(s) && (s[r.i] == '+' || s[r.i] == '-') {
			r.i++
		}
		if digits() == 0 {
			return "", false
		}
	}
	return s[start:r.i], true
}
