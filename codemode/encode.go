package codemode

import (
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/dop251/goja"
)

// maxNesting caps the depth of values the sandbox encodes, parses or joins:
// goja recurses in Go on nested values, and a value nested a million deep
// would exhaust the goroutine's stack.
const maxNesting = 100

var (
	errTooLarge = errors.New("too large")
	errCircular = errors.New("circular")
	errTooDeep  = errors.New("too deep")
)

// encoder writes a JavaScript value as JSON the way JSON.stringify does
// (toJSON, a replacer function or key list, indentation), with the sandbox's
// limits checked as it goes: output size, nesting depth, array length. It is
// also JSON.stringify inside the sandbox, so that call can never build an
// unbounded string or recurse without bound.
type encoder struct {
	rt       *goja.Runtime
	b        strings.Builder
	limit    int
	maxArray int
	indent   string
	replacer goja.Callable
	allow    map[string]bool // replacer list; nil means every key
	stack    []*goja.Object
}

// encode returns v as JSON; ok is false when v encodes to nothing
// (undefined, a function, a symbol).
func (e *encoder) encode(v goja.Value) (out string, ok bool, err error) {
	holder := e.rt.NewObject()
	// CreateDataProperty, as JSON.stringify's wrapper: a setter for ""
	// that a cell put on Object.prototype does not run.
	_ = holder.DefineDataProperty("", v, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	ok, err = e.property(holder, "", v, "")
	if err != nil {
		return "", false, err
	}
	return e.b.String(), ok, nil
}

func (e *encoder) write(s string) error {
	if e.b.Len()+len(s) > e.limit {
		return errTooLarge
	}
	e.b.WriteString(s)
	return nil
}

// call invokes a JavaScript function; its exceptions propagate as panics,
// which goja turns back into exceptions (or aborts, for uncatchable ones).
func call(fn goja.Callable, this goja.Value, args ...goja.Value) goja.Value {
	v, err := fn(this, args...)
	if err != nil {
		panic(err)
	}
	return v
}

// property serialises holder[key] whose value is v (SerializeJSONProperty).
func (e *encoder) property(holder *goja.Object, key string, v goja.Value, indent string) (bool, error) {
	if o, ok := v.(*goja.Object); ok {
		if fn, ok := goja.AssertFunction(o.Get("toJSON")); ok {
			v = call(fn, o, e.rt.ToValue(key))
		}
	}
	if e.replacer != nil {
		v = call(e.replacer, holder, e.rt.ToValue(key), v)
	}
	if v == nil || goja.IsUndefined(v) {
		return false, nil
	}
	if _, isSym := v.(*goja.Symbol); isSym {
		// Left out as JSON.stringify leaves symbols out: exported, a symbol
		// is its description, which was written as a string.
		return false, nil
	}
	if goja.IsNull(v) {
		return true, e.write("null")
	}
	o, isObj := v.(*goja.Object)
	if isObj {
		switch o.ClassName() {
		case "Number":
			v, isObj = e.rt.ToValue(o.ToFloat()), false
		case "String":
			v, isObj = o.ToString(), false
		case "Boolean":
			v, isObj = e.rt.ToValue(o.Export()), false
		}
	}
	if !isObj {
		// A string's JSON is at least its UTF-16 length and two quotes:
		// one that cannot fit is refused before it is copied to be quoted.
		if str, ok := v.(goja.String); ok && str.Length()+2 > e.limit-e.b.Len() {
			room := e.limit - e.b.Len()
			start := quote(str.Substring(0, min(str.Length(), max(room, 0))).String())
			start, _ = clip.Bytes(start[:len(start)-1], room)
			e.b.WriteString(start) // what fits, for a display cut there
			return false, errTooLarge
		}
		switch x := v.Export().(type) {
		case bool:
			if x {
				return true, e.write("true")
			}
			return true, e.write("false")
		case string:
			return true, e.write(quote(x))
		case int64, float64:
			s := v.String()
			if s == "NaN" || s == "Infinity" || s == "-Infinity" {
				s = "null"
			}
			return true, e.write(s)
		}
		return false, nil // symbols
	}
	if _, ok := goja.AssertFunction(o); ok {
		return false, nil
	}
	for _, p := range e.stack {
		if p == o {
			return false, errCircular
		}
	}
	if len(e.stack) >= maxNesting {
		return false, errTooDeep
	}
	e.stack = append(e.stack, o)
	defer func() { e.stack = e.stack[:len(e.stack)-1] }()
	inner := indent + e.indent
	if o.ClassName() == "Array" {
		n := o.Get("length").ToInteger()
		if n > int64(e.maxArray) {
			return false, errTooLarge
		}
		if err := e.write("["); err != nil {
			return false, err
		}
		for i := range n {
			if i > 0 {
				if err := e.write(","); err != nil {
					return false, err
				}
			}
			if err := e.newline(inner); err != nil {
				return false, err
			}
			k := strconv.FormatInt(i, 10)
			ok, err := e.property(o, k, o.Get(k), inner)
			if err != nil {
				return false, err
			}
			if !ok {
				if err := e.write("null"); err != nil {
					return false, err
				}
			}
		}
		if n > 0 {
			if err := e.newline(indent); err != nil {
				return false, err
			}
		}
		return true, e.write("]")
	}
	if err := e.write("{"); err != nil {
		return false, err
	}
	first := true
	for _, k := range o.Keys() {
		if e.allow != nil && !e.allow[k] {
			continue
		}
		mark := e.b.Len()
		if !first {
			if err := e.write(","); err != nil {
				return false, err
			}
		}
		if err := e.newline(inner); err != nil {
			return false, err
		}
		sep := ":"
		if e.indent != "" {
			sep = ": "
		}
		if err := e.write(quote(k) + sep); err != nil {
			return false, err
		}
		ok, err := e.property(o, k, o.Get(k), inner)
		if err != nil {
			return false, err
		}
		if !ok { // undefined and functions are left out, with their key
			s := e.b.String()[:mark]
			e.b.Reset()
			e.b.WriteString(s)
			continue
		}
		first = false
	}
	if !first {
		if err := e.newline(indent); err != nil {
			return false, err
		}
	}
	return true, e.write("}")
}

func (e *encoder) newline(indent string) error {
	if e.indent == "" {
		return nil
	}
	return e.write("\n" + indent)
}

// quote writes s as a JSON string the way JSON.stringify does: quotes,
// backslashes and control characters escaped, everything else as UTF-8.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				b.WriteString(`\"`)
			case c == '\\':
				b.WriteString(`\\`)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c == '\t':
				b.WriteString(`\t`)
			case c == '\b':
				b.WriteString(`\b`)
			case c == '\f':
				b.WriteString(`\f`)
			case c < 0x20:
				b.WriteString(`\u00`)
				b.WriteByte("0123456789abcdef"[c>>4])
				b.WriteByte("0123456789abcdef"[c&0xf])
			default:
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(`\ufffd`)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// Bytes the parse of a JSON text holds, about, for each object or array
// (an empty one is about 200) and for each element or member (a slot, a
// key, a boxed number); see jsonShape.
const (
	jsonContainerBytes = 256
	jsonMemberBytes    = 32
)

// jsonShape scans JSON text outside its strings: tooDeep reports whether it
// nests deeper than max, and cost is about how many bytes parsing it holds.
// A parse allocates per value, not per character of the text: a text of
// empty objects within the string limit ("{}," 2.6 million times) made 687
// MiB of them in one call the interrupt cannot stop.
func jsonShape(s string, max int) (tooDeep bool, cost int64) {
	depth, inStr, esc := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr:
			switch {
			case esc:
				esc = false
			case c == '\\':
				esc = true
			case c == '"':
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '[' || c == '{':
			cost += jsonContainerBytes
			if depth++; depth > max {
				return true, cost
			}
		case c == ']' || c == '}':
			depth--
		case c == ',' || c == ':':
			cost += jsonMemberBytes
		}
	}
	return false, cost
}
