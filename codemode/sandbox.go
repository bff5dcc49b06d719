package codemode

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/dop251/goja"
)

// The sandbox starts from goja's bare ECMAScript runtime, which reaches no
// file, network, process, environment or Go object: only what is set on its
// global object. Setup removes what could still escape the limits:
//
//   - code generation from strings (eval, Function and the constructors of
//     async and generator functions): a cell's code is checked before it
//     runs, generated code would not be;
//   - BigInt (one exponentiation can take unbounded time and memory), Proxy
//     and the binary types (ArrayBuffer, typed arrays, DataView: one call
//     allocates any size), WeakRef and FinalizationRegistry (they observe the
//     garbage collector), GoError;
//
// and wraps every builtin whose work or output grows with a length or count
// argument rather than with memory the cell already holds: goja runs
// builtins in Go without checking for interrupts, so without these checks
// one call such as "x".repeat(2**30) or Array.prototype.fill on a sparse
// array of length 2**32-1 would run to completion whatever the limits.

// sandboxLimits are derived from Config.MemoryLimit.
type sandboxLimits struct {
	maxString int // characters
	maxArray  int // elements
	maxArgs   int // arguments of one call
	// maxKeys caps the own keys one Object.keys/entries/assign/... call
	// makes a key, an entry or a property of (up to a kilobyte each), and
	// maxPromises the elements one Promise.all/allSettled/any/race call
	// makes a promise and its reactions for (about 5 KB each).
	maxKeys     int
	maxPromises int
	memory      int64 // Config.MemoryLimit
	// maxEntries caps the entries one new Set/Map/WeakSet/WeakMap call
	// makes from an array or a string (about 200 bytes each).
	maxEntries int
}

func limitsFor(memory int64) sandboxLimits {
	l := sandboxLimits{maxString: int(memory / 8), maxArray: int(memory / 64),
		maxKeys: int(memory / 1024), maxPromises: int(memory / 4096),
		maxEntries: int(memory / 256), memory: memory}
	l.maxArgs = min(l.maxArray, 100_000)
	return l
}

// maxBindDepth caps chains of bound functions: calling one recurses in Go.
const maxBindDepth = 32

// removedGlobals are deleted from the global object.
var removedGlobals = []string{"GoError", "BigInt", "Proxy", "ArrayBuffer", "SharedArrayBuffer", "DataView",
	"Uint8Array", "Uint8ClampedArray", "Int8Array", "Uint16Array", "Int16Array", "Uint32Array", "Int32Array",
	"Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array", "WeakRef", "FinalizationRegistry", "Atomics"}

// arrayMethods do work proportional to their receiver's length.
var arrayMethods = []string{"concat", "copyWithin", "entries", "every", "fill", "filter", "find", "findIndex",
	"findLast", "findLastIndex", "flat", "flatMap", "forEach", "includes", "indexOf", "join", "keys", "lastIndexOf",
	"map", "push", "reduce", "reduceRight", "reverse", "shift", "slice", "some", "sort", "splice",
	"toLocaleString", "toReversed", "toSorted", "toSpliced", "toString", "unshift", "values", "with"}

// sandbox installs the guards on a fresh runtime.
type sandbox struct {
	rt        *goja.Runtime
	lim       sandboxLimits
	bindDepth *goja.Symbol
	// joinDepth counts nested Array.prototype.join/toString calls (they
	// recurse in Go through nested arrays).
	joinDepth  int
	parseJSON  goja.Callable
	fnToString goja.Callable
	// ownDesc is the original Object.getOwnPropertyDescriptor (see
	// stableProp).
	ownDesc goja.Callable
	// aborted is the abort reason of the cell running on rt ("" while it
	// may go on); see installIterators. abort aborts that cell.
	aborted func() string
	abort   func(reason string)
	// depth counts the sandbox's Go functions nested in one another;
	// counted holds them, boundTarget makes the JavaScript function bind
	// binds in place of any other Go function, sourceOf is the original
	// Function.prototype.toString (see nativedepth.go).
	depth       int
	counted     map[*goja.Object]bool
	boundTarget goja.Callable
	sourceOf    goja.Callable
}

func (s *sandbox) fail(format string, args ...any) {
	panic(s.rt.NewTypeError(fmt.Sprintf(format, args...)))
}

func (s *sandbox) obj(path string) *goja.Object {
	v := s.rt.GlobalObject().Get(path)
	if v == nil {
		return nil
	}
	return v.ToObject(s.rt)
}

// wrap replaces o[name] with a function that runs check, then the original
// with the call as check left it.
//
// A check must look at the values the original will use: a value whose
// conversion runs code (valueOf, toString, a getter) can give the check one
// answer and the original another. So checks convert such arguments once
// and hand the original the converted primitives (see toStr, toNum), and
// read lengths only where reading them runs no code (see lengthOf).
func (s *sandbox) wrap(o *goja.Object, name string, check func(c *goja.FunctionCall)) {
	origv := o.Get(name)
	orig, ok := goja.AssertFunction(origv)
	if !ok {
		return
	}
	_ = o.Set(name, like(s.native(func(c goja.FunctionCall) goja.Value {
		c.Arguments = append([]goja.Value(nil), c.Arguments...)
		check(&c)
		return call(orig, c.This, c.Arguments...)
	}), origv))
}

func (s *sandbox) wrapSymbol(o *goja.Object, sym *goja.Symbol, check func(c *goja.FunctionCall)) {
	origv := o.GetSymbol(sym)
	orig, ok := goja.AssertFunction(origv)
	if !ok {
		return
	}
	_ = o.SetSymbol(sym, like(s.native(func(c goja.FunctionCall) goja.Value {
		c.Arguments = append([]goja.Value(nil), c.Arguments...)
		check(&c)
		return call(orig, c.This, c.Arguments...)
	}), origv))
}

// like gives fn, a Go function standing in for the builtin orig, orig's
// name and length: code reads them (a curry helper reads length), and
// stacks show the name, which was otherwise the Go function's
// ("github.com/agentryhq/agentry/codemode.(*sandbox).wrap.func1", length 0).
func like(fn, orig goja.Value) goja.Value {
	o, ok := fn.(*goja.Object)
	src, isObj := orig.(*goja.Object)
	if ok && isObj {
		_ = o.DefineDataProperty("name", src.Get("name"), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
		_ = o.DefineDataProperty("length", src.Get("length"), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	return fn
}

// named gives fn, a Go function, its name and length as JavaScript sees
// them.
func named(rt *goja.Runtime, fn goja.Value, name string, length int) goja.Value {
	if o, ok := fn.(*goja.Object); ok {
		_ = o.DefineDataProperty("name", rt.ToValue(name), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
		_ = o.DefineDataProperty("length", rt.ToValue(length), goja.FLAG_FALSE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	return fn
}

// setArg sets argument i of c, padding with undefined.
func setArg(c *goja.FunctionCall, i int, v goja.Value) {
	for len(c.Arguments) <= i {
		c.Arguments = append(c.Arguments, goja.Undefined())
	}
	c.Arguments[i] = v
}

// toStr converts v to a string primitive once (ToString): the original
// builtin then reads the same text the check measured.
func toStr(v goja.Value) goja.Value { return v.ToString() }

// toNum converts v to a number primitive once (ToNumber).
func toNum(v goja.Value) goja.Value { return v.ToNumber() }

// thisString converts a string method's receiver to a string primitive,
// leaving null and undefined for the original to refuse.
func thisString(c *goja.FunctionCall) {
	if defined(c.This) && !goja.IsNull(c.This) {
		c.This = toStr(c.This)
	}
}

// stableProp finds key (a string or a symbol) on o or its prototypes
// without running code: value is the data property's value, accessor says
// the property is a getter/setter (whose value could change from one read
// to the next).
func (s *sandbox) stableProp(o *goja.Object, key goja.Value) (value goja.Value, accessor, found bool) {
	for p, depth := o, 0; p != nil && depth < 10_000; p, depth = p.Prototype(), depth+1 {
		d := call(s.ownDesc, goja.Undefined(), p, key)
		if !defined(d) {
			continue
		}
		desc := d.ToObject(s.rt)
		for _, k := range desc.GetOwnPropertyNames() {
			if k == "get" || k == "set" {
				return nil, true, true
			}
		}
		return desc.Get("value"), false, true
	}
	return nil, false, false
}

// lengthOf is ToLength(v.length) as a float (it may exceed int64), for a
// builtin about to read the same length. A length that could differ on the
// builtin's own read (a getter, or an object whose conversion to a number
// runs code) is refused: the check would measure one length and the
// builtin walk another.
func (s *sandbox) lengthOf(what string, v goja.Value) float64 {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return 0
	}
	var n goja.Value
	switch o := v.(type) {
	case *goja.Object:
		if o.ClassName() == "Array" { // an own data property holding a number
			n = o.Get("length")
			break
		}
		val, accessor, found := s.stableProp(o, s.rt.ToValue("length"))
		if accessor {
			s.fail("%s: an array-like whose length is a getter is not supported in this sandbox; use a real array", what)
		}
		if !found {
			return 0
		}
		if _, isObj := val.(*goja.Object); isObj {
			s.fail("%s: an array-like whose length is an object is not supported in this sandbox; use a number", what)
		}
		n = val
	case goja.String:
		return float64(o.Length())
	default:
		return s.lengthOf(what, v.ToObject(s.rt))
	}
	if n == nil {
		return 0
	}
	f := n.ToFloat()
	if math.IsNaN(f) || f < 0 {
		return 0
	}
	return math.Trunc(f)
}

func (s *sandbox) strLen(v goja.Value) int {
	if v == nil {
		return 0
	}
	if str, ok := v.ToString().(goja.String); ok {
		return str.Length()
	}
	return len(v.String())
}

func (s *sandbox) checkArray(what string, n float64) {
	if n > float64(s.lim.maxArray) {
		s.fail("%s: %.0f elements is over the sandbox's limit of %d", what, n, s.lim.maxArray)
	}
}

func (s *sandbox) checkString(what string, n float64) {
	if n > float64(s.lim.maxString) {
		s.fail("%s: a string of %.0f characters would be over the sandbox's limit of %d", what, n, s.lim.maxString)
	}
}

func isRegExp(v goja.Value) bool {
	o, ok := v.(*goja.Object)
	return ok && o.ClassName() == "RegExp"
}

func arg(args []goja.Value, i int) goja.Value {
	if i < len(args) {
		return args[i]
	}
	return goja.Undefined()
}

func defined(v goja.Value) bool { return v != nil && !goja.IsUndefined(v) }

// install sets up the sandbox on s.rt.
func (s *sandbox) install() error {
	rt := s.rt
	g := rt.GlobalObject()
	s.bindDepth = goja.NewSymbol("bindDepth")
	if err := s.guardBuiltins(); err != nil {
		return err
	}
	stub := func(what string) goja.Value {
		return named(rt, s.native(func(goja.FunctionCall) goja.Value {
			s.fail("%s: code generation from strings is disabled in this sandbox; write the code in the cell", what)
			return nil
		}), what, 1)
	}
	// Code generation.
	fnProto := s.obj("Function").Get("prototype").ToObject(rt)
	if err := g.Set("eval", stub("eval")); err != nil {
		return err
	}
	fnStub := stub("Function").ToObject(rt)
	_ = fnStub.DefineDataProperty("prototype", fnProto, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
	if err := g.Set("Function", fnStub); err != nil {
		return err
	}
	protos, err := rt.RunProgram(protosProgram())
	if err != nil {
		return err
	}
	for i, p := range append([]goja.Value{fnProto}, exportValues(rt, protos)...) {
		name := []string{"Function", "AsyncFunction", "GeneratorFunction"}[i]
		if err := p.ToObject(rt).DefineDataProperty("constructor", stub(name), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
			return err
		}
	}
	for _, n := range removedGlobals {
		_ = g.Delete(n)
	}
	if err := s.installIterators(); err != nil {
		return err
	}
	s.ownDesc, _ = goja.AssertFunction(s.obj("Object").Get("getOwnPropertyDescriptor"))
	s.wrap(fnProto, "apply", func(c *goja.FunctionCall) {
		s.checkArgs("Function.prototype.apply", arg(c.Arguments, 1))
	})
	s.wrapBind(fnProto)
	s.fnToString, _ = goja.AssertFunction(fnProto.Get("toString"))
	_ = fnProto.Set("toString", like(s.native(func(c goja.FunctionCall) goja.Value {
		return rt.ToValue(declaredSource(call(s.fnToString, c.This).String()))
	}), fnProto.Get("toString")))
	reflect := s.obj("Reflect")
	s.wrap(reflect, "apply", func(c *goja.FunctionCall) {
		s.checkArgs("Reflect.apply", arg(c.Arguments, 2))
	})
	s.wrap(reflect, "construct", func(c *goja.FunctionCall) {
		s.checkArgs("Reflect.construct", arg(c.Arguments, 1))
	})

	s.installString()
	s.installArray()
	s.installPerElement()
	s.installJSON()
	if err := s.installCollections(); err != nil {
		return err
	}
	if err := s.installKeysCheck(); err != nil {
		return err
	}
	return s.installRegExp()
}

func exportValues(rt *goja.Runtime, arr goja.Value) []goja.Value {
	o := arr.ToObject(rt)
	n := int(o.Get("length").ToInteger())
	out := make([]goja.Value, n)
	for i := range n {
		out[i] = o.Get(fmt.Sprint(i))
	}
	return out
}

func (s *sandbox) checkArgs(what string, list goja.Value) {
	if defined(list) && !goja.IsNull(list) {
		if n := s.lengthOf(what, list); n > float64(s.lim.maxArgs) {
			s.fail("%s: %.0f arguments is over the sandbox's limit of %d", what, n, s.lim.maxArgs)
		}
	}
}

// wrapBind tracks how deep bound functions are chained.
func (s *sandbox) wrapBind(fnProto *goja.Object) {
	rt := s.rt
	orig, ok := goja.AssertFunction(fnProto.Get("bind"))
	if !ok {
		return
	}
	_ = fnProto.Set("bind", like(s.native(func(c goja.FunctionCall) goja.Value {
		depth := int64(0)
		if o, ok := c.This.(*goja.Object); ok {
			if d := o.GetSymbol(s.bindDepth); d != nil && !goja.IsUndefined(d) {
				depth = d.ToInteger()
			}
		}
		if depth >= maxBindDepth {
			s.fail("Function.prototype.bind: bound functions are limited to %d levels", maxBindDepth)
		}
		bound := call(orig, s.bindTarget(c.This), c.Arguments...)
		if o, ok := bound.(*goja.Object); ok {
			_ = o.DefineDataPropertySymbol(s.bindDepth, rt.ToValue(depth+1), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
		}
		return bound
	}), fnProto.Get("bind")))
}

func (s *sandbox) installString() {
	rt := s.rt
	proto := s.obj("String").Get("prototype").ToObject(rt)
	s.wrap(proto, "repeat", func(c *goja.FunctionCall) {
		thisString(c)
		n := toNum(arg(c.Arguments, 0))
		setArg(c, 0, n)
		if f := n.ToFloat(); f > 0 {
			s.checkString("String.prototype.repeat", float64(s.strLen(c.This))*f)
		}
	})
	for _, m := range []string{"padStart", "padEnd"} {
		s.wrap(proto, m, func(c *goja.FunctionCall) {
			thisString(c)
			n := toNum(arg(c.Arguments, 0))
			setArg(c, 0, n)
			s.checkString("String.prototype."+m, n.ToFloat())
		})
	}
	for _, m := range []string{"replace", "replaceAll"} {
		s.wrap(proto, m, func(c *goja.FunctionCall) {
			s.guardReplacement(c, 1, "String.prototype."+m)
		})
	}
	s.wrap(proto, "split", func(c *goja.FunctionCall) {
		sep := arg(c.Arguments, 0)
		if !defined(sep) || goja.IsNull(sep) {
			return
		}
		thisString(c)
		l := float64(s.strLen(c.This))
		n := l + 1
		if _, isObj := sep.(*goja.Object); !isObj {
			sep = toStr(sep)
			setArg(c, 0, sep)
			if p := sep.String(); p != "" {
				n = float64(strings.Count(c.This.String(), p)) + 1
			} else {
				n = l
			}
		}
		if lim := arg(c.Arguments, 1); defined(lim) {
			lim = toNum(lim)
			setArg(c, 1, lim)
			n = min(n, float64(uint32(lim.ToInteger())))
		}
		s.checkArray("String.prototype.split", n)
	})
	s.wrap(proto, "concat", func(c *goja.FunctionCall) {
		thisString(c)
		n := float64(s.strLen(c.This))
		for i, v := range c.Arguments {
			c.Arguments[i] = toStr(v)
			n += float64(s.strLen(c.Arguments[i]))
		}
		s.checkString("String.prototype.concat", n)
	})
	s.wrap(proto, "normalize", func(c *goja.FunctionCall) {
		thisString(c)
		s.checkString("String.prototype.normalize", float64(s.strLen(c.This))*4)
	})
	for _, m := range []string{"match", "matchAll", "search"} {
		s.wrap(proto, m, func(c *goja.FunctionCall) {
			// A pattern that is not a RegExp becomes one (unchecked, built
			// in Go): convert it to its text once and check that text.
			if p := arg(c.Arguments, 0); defined(p) && !goja.IsNull(p) && !isRegExp(p) {
				p = toStr(p)
				setArg(c, 0, p)
				if err := checkPattern(p.String(), ""); err != nil {
					s.fail("String.prototype.%s: %v", m, err)
				}
			}
		})
	}
	s.wrapSymbol(proto, goja.SymIterator, func(c *goja.FunctionCall) {
		thisString(c)
		s.checkArray("iterating a string", float64(s.strLen(c.This)))
	})
	raw := s.obj("String")
	s.wrap(raw, "raw", func(c *goja.FunctionCall) {
		// String.raw({raw: r}, ...subs) joins r[0] … r[r.length-1]: one
		// segment (at least "undefined") per element of r's length.
		cooked := arg(c.Arguments, 0)
		if !defined(cooked) || goja.IsNull(cooked) {
			return
		}
		r, accessor, _ := s.stableProp(cooked.ToObject(rt), rt.ToValue("raw"))
		if accessor {
			s.fail("String.raw: a raw getter is not supported in this sandbox")
		}
		if defined(r) && !goja.IsNull(r) {
			s.checkArray("String.raw", s.lengthOf("String.raw", r))
		}
	})
}

// guardReplacement makes the replacement string at argument i of a replace
// call a function that builds each replacement (GetSubstitution) and
// counts what the result has grown to, refusing it past the string limit.
// A replacement template expands per match ($&, $1, $` and $' insert text
// of the match), and how many matches there are (and, for a RegExp whose
// exec is the cell's own, how long they are) is only known as the builtin
// runs: counting as it goes is the only bound that holds.
func (s *sandbox) guardReplacement(c *goja.FunctionCall, i int, what string) {
	rv := arg(c.Arguments, i)
	if _, isFn := goja.AssertFunction(rv); isFn {
		return // each replacement is computed by code the limits watch
	}
	tmpl, _ := rv.ToString().(goja.String)
	if tmpl == nil {
		return
	}
	total := 0
	setArg(c, i, s.native(func(m goja.FunctionCall) goja.Value {
		a := m.Arguments
		var groups goja.Value = goja.Undefined()
		if n := len(a); n >= 3 {
			if _, isObj := a[n-1].(*goja.Object); isObj {
				groups, a = a[n-1], a[:n-1]
			}
		}
		if len(a) < 3 {
			return tmpl
		}
		str, _ := a[len(a)-1].ToString().(goja.String)
		matched, _ := a[0].ToString().(goja.String)
		if str == nil || matched == nil {
			return tmpl
		}
		if total == 0 {
			total = str.Length()
		}
		out, ok := s.substitute(matched, str, int(a[len(a)-2].ToInteger()), a[1:len(a)-2], groups, tmpl, s.lim.maxString-total)
		if !ok {
			s.fail("%s: the result would be over the sandbox's limit of %d characters", what, s.lim.maxString)
		}
		total += out.Length()
		return out
	}))
}

// substitute is GetSubstitution (ECMA-262 22.1.3.19.1): the replacement
// for matched at position of str, from the template tmpl. Positions are in
// UTF-16 code units, as JavaScript counts them. ok is false, and nothing
// past room characters is built, when the replacement would be longer than
// room.
func (s *sandbox) substitute(matched, str goja.String, position int, captures []goja.Value, groups goja.Value, tmpl goja.String, room int) (_ goja.String, ok bool) {
	if !strings.Contains(tmpl.String(), "$") {
		return tmpl, tmpl.Length() <= room
	}
	l, tl := str.Length(), tmpl.Length()
	position = min(max(position, 0), l)
	tail := min(position+matched.Length(), l)
	text := func(v goja.Value) goja.String {
		if !defined(v) {
			return nil
		}
		t, _ := v.ToString().(goja.String)
		return t
	}
	var b goja.StringBuilder
	written := 0 // characters
	for i := 0; i < tl; i++ {
		if written > room {
			return nil, false
		}
		ch := tmpl.CharAt(i)
		if ch != '$' || i+1 == tl {
			b.WriteSubstring(tmpl, i, i+1)
			written++
			continue
		}
		next := tmpl.CharAt(i + 1)
		switch {
		case next == '$':
			b.WriteUTF8String("$")
			written++
			i++
		case next == '&':
			b.WriteString(matched)
			written += matched.Length()
			i++
		case next == '`':
			b.WriteSubstring(str, 0, position)
			written += position
			i++
		case next == '\'':
			b.WriteSubstring(str, tail, l)
			written += l - tail
			i++
		case next >= '0' && next <= '9':
			n, width := int(next-'0'), 1
			if i+2 < tl {
				if d := tmpl.CharAt(i + 2); d >= '0' && d <= '9' {
					if nn := n*10 + int(d-'0'); nn >= 1 && nn <= len(captures) {
						n, width = nn, 2
					}
				}
			}
			if n < 1 || n > len(captures) {
				b.WriteUTF8String("$")
				written++
				continue
			}
			if t := text(captures[n-1]); t != nil {
				b.WriteString(t)
				written += t.Length()
			}
			i += width
		case next == '<':
			end := -1
			for j := i + 2; j < tl; j++ {
				if tmpl.CharAt(j) == '>' {
					end = j
					break
				}
			}
			if !defined(groups) || end < 0 {
				b.WriteUTF8String("$")
				written++
				continue
			}
			if t := text(groups.ToObject(s.rt).Get(tmpl.Substring(i+2, end).String())); t != nil {
				b.WriteString(t)
				written += t.Length()
			}
			i = end
		default:
			b.WriteUTF8String("$")
			written++
		}
	}
	if written > room {
		return nil, false
	}
	return b.String(), true
}

func (s *sandbox) installArray() {
	rt := s.rt
	ctor := s.obj("Array")
	proto := ctor.Get("prototype").ToObject(rt)
	spreadable := rt.ToValue(goja.SymIsConcatSpreadable)
	for _, m := range arrayMethods {
		name := "Array.prototype." + m
		s.wrap(proto, m, func(c *goja.FunctionCall) {
			a := c.Arguments
			n := s.lengthOf(name, c.This)
			switch m {
			case "push", "unshift":
				n += float64(len(a))
			case "concat":
				for _, v := range a {
					o, ok := v.(*goja.Object)
					if !ok {
						n++
						continue
					}
					// Spread when o is an array or says so; a getter may
					// say either, so it counts as spread.
					spread := o.ClassName() == "Array"
					if val, accessor, found := s.stableProp(o, spreadable); accessor {
						spread = true
					} else if found && defined(val) {
						spread = val.ToBoolean()
					}
					if spread {
						n += s.lengthOf(name, o)
					} else {
						n++
					}
				}
			}
			s.checkArray(name, n)
			switch m {
			case "join":
				sep := 1.0
				if v := arg(a, 0); defined(v) {
					c.Arguments[0] = toStr(v)
					sep = float64(s.strLen(c.Arguments[0]))
				}
				s.checkString(name, max(n-1, 0)*sep)
			case "flat":
				depth := 1.0
				if v := arg(a, 0); defined(v) {
					depth = v.ToFloat()
				}
				depth = min(depth, maxNesting)
				s.checkFlat(c.This, int(depth), name)
				setArg(c, 0, rt.ToValue(depth))
			case "flatMap":
				if fn, ok := goja.AssertFunction(arg(a, 0)); ok {
					c.Arguments[0] = s.native(func(c goja.FunctionCall) goja.Value {
						v := call(fn, c.This, c.Arguments...)
						if o, ok := v.(*goja.Object); ok && o.ClassName() == "Array" {
							s.checkArray(name, s.lengthOf(name, o))
						}
						return v
					})
				}
			}
		})
	}
	// join and toString recurse in Go through nested arrays.
	for _, m := range []string{"join", "toString", "toLocaleString"} {
		orig, _ := goja.AssertFunction(proto.Get(m))
		_ = proto.Set(m, like(s.native(func(c goja.FunctionCall) goja.Value {
			if s.joinDepth >= maxNesting {
				s.fail("Array.prototype.%s: arrays nested deeper than %d levels", m, maxNesting)
			}
			s.joinDepth++
			defer func() { s.joinDepth-- }()
			return call(orig, c.This, c.Arguments...)
		}), proto.Get(m)))
	}
	s.wrapSymbol(proto, goja.SymIterator, func(c *goja.FunctionCall) {
		s.checkArray("iterating an array", s.lengthOf("iterating an array", c.This))
	})
	iterator := rt.ToValue(goja.SymIterator)
	s.wrap(ctor, "from", func(c *goja.FunctionCall) {
		// Array.from walks items' length unless items has an iterator; a
		// getter may answer either, so only an iterator that is a plain
		// property spares the check.
		if o, ok := arg(c.Arguments, 0).(*goja.Object); ok {
			if it, accessor, _ := s.stableProp(o, iterator); accessor || !defined(it) || goja.IsNull(it) {
				s.checkArray("Array.from", s.lengthOf("Array.from", o))
			}
		}
	})
}

// checkFlat bounds the work of flat(depth): every nested array it would
// visit must be within the array limit, and so must the total.
func (s *sandbox) checkFlat(v goja.Value, depth int, name string) {
	total := 0.0
	var walk func(o *goja.Object, d int)
	walk = func(o *goja.Object, d int) {
		n := s.lengthOf(name, o)
		s.checkArray(name, n)
		total += n
		s.checkArray(name, total)
		if d == 0 {
			return
		}
		for i := range int(n) {
			if el, ok := o.Get(fmt.Sprint(i)).(*goja.Object); ok && el.ClassName() == "Array" {
				walk(el, d-1)
			}
		}
	}
	if o, ok := v.(*goja.Object); ok {
		walk(o, depth)
	}
}

func (s *sandbox) installJSON() {
	rt := s.rt
	j := s.obj("JSON")
	s.parseJSON, _ = goja.AssertFunction(j.Get("parse"))
	parse := s.parseJSON
	_ = j.Set("parse", like(s.native(func(c goja.FunctionCall) goja.Value {
		args := append([]goja.Value{toStr(arg(c.Arguments, 0))}, c.Arguments[min(1, len(c.Arguments)):]...)
		if err := s.checkJSONText(args[0].String()); err != nil {
			panic(rt.NewTypeError("JSON.parse: " + err.Error()))
		}
		return call(parse, c.This, args...)
	}), j.Get("parse")))
	_ = j.Set("stringify", like(s.native(func(c goja.FunctionCall) goja.Value {
		e := &encoder{rt: rt, limit: s.lim.maxString, maxArray: s.lim.maxArray}
		switch r := arg(c.Arguments, 1).(type) {
		case *goja.Object:
			if fn, ok := goja.AssertFunction(r); ok {
				e.replacer = fn
			} else if r.ClassName() == "Array" {
				s.checkArray("JSON.stringify", s.lengthOf("JSON.stringify", r))
				e.allow = map[string]bool{}
				for _, v := range exportValues(rt, r) {
					e.allow[v.String()] = true
				}
			}
		}
		// The indentation is a number or a string (or such a wrapper
		// object); anything else is ignored, not converted (exporting an
		// array copies all of it).
		space := arg(c.Arguments, 2)
		if o, ok := space.(*goja.Object); ok {
			switch o.ClassName() {
			case "Number":
				space = rt.ToValue(o.ToFloat())
			case "String":
				space = o.ToString()
			default:
				space = goja.Undefined()
			}
		}
		switch sp := space.Export().(type) {
		case int64:
			e.indent = strings.Repeat(" ", int(min(max(sp, 0), 10)))
		case float64:
			e.indent = strings.Repeat(" ", int(min(max(sp, 0), 10)))
		case string:
			e.indent = space.String()
			if str, ok := space.(goja.String); ok && str.Length() > 10 {
				e.indent = str.Substring(0, 10).String() // ten UTF-16 units, as JavaScript counts
			}
		}
		out, ok, err := e.encode(arg(c.Arguments, 0))
		switch err {
		case nil:
		case errCircular:
			s.fail("Converting circular structure to JSON")
		case errTooDeep:
			s.fail("JSON.stringify: the value nests deeper than %d levels", maxNesting)
		default:
			s.fail("JSON.stringify: the result would be over the sandbox's limit of %d characters (or contain an array over %d elements)", s.lim.maxString, s.lim.maxArray)
		}
		if !ok {
			return goja.Undefined()
		}
		return rt.ToValue(out)
	}), j.Get("stringify")))
}

// checkJSONText refuses a JSON text the sandbox does not parse: one nested
// deeper than maxNesting (goja's parser recurses), or one whose values would
// take more than the memory limit (the parse is one Go call).
func (s *sandbox) checkJSONText(text string) error {
	tooDeep, cost := jsonShape(text, maxNesting)
	switch {
	case tooDeep:
		return fmt.Errorf("the text nests deeper than %d levels, which the sandbox does not parse", maxNesting)
	case cost > s.lim.memory:
		return fmt.Errorf("the text has so many objects, arrays and values that parsing it would take about %d MiB, over the sandbox's limit of %d MiB for one call; parse it in smaller pieces", cost>>20, s.lim.memory>>20)
	}
	return nil
}

// The setup scripts are compiled once per process; a goja Program can run
// in any number of runtimes.
var (
	// goja has no async generators.
	protosProgram = sync.OnceValue(func() *goja.Program {
		return goja.MustCompile("setup", `[Object.getPrototypeOf(async function () {}), Object.getPrototypeOf(function* () {})]`, true)
	})
	regexpProgram = sync.OnceValue(func() *goja.Program {
		return goja.MustCompile("setup", `(function (check, Orig, construct) {
  function RegExp(pattern, flags) {
    check(pattern, flags);
    return construct(Orig, [pattern, flags], new.target || RegExp);
  }
  RegExp.prototype = Orig.prototype;
  Object.defineProperty(Orig.prototype, "constructor", { value: RegExp, writable: true, configurable: true });
  return RegExp;
})`, true)
	})
)

// installRegExp replaces the RegExp constructor by one that refuses
// patterns needing a backtracking engine (literals are checked by rewrite).
func (s *sandbox) installRegExp() error {
	rt := s.rt
	proto := s.obj("RegExp").Get("prototype").ToObject(rt)
	_ = proto.Delete("compile")
	mk, err := rt.RunProgram(regexpProgram())
	if err != nil {
		return err
	}
	fn, _ := goja.AssertFunction(mk)
	check := s.native(func(c goja.FunctionCall) goja.Value {
		p, flags := arg(c.Arguments, 0), arg(c.Arguments, 1)
		src, fl := "", ""
		if isRegExp(p) {
			o := p.(*goja.Object)
			src, fl = o.Get("source").String(), o.Get("flags").String()
		} else if defined(p) {
			src = p.String()
		}
		if defined(flags) {
			fl = flags.String()
		}
		if err := checkPattern(src, fl); err != nil {
			s.fail("RegExp: %v", err)
		}
		return goja.Undefined()
	})
	reflect := s.obj("Reflect")
	wrapped, err := fn(goja.Undefined(), check, s.obj("RegExp"), reflect.Get("construct"))
	if err != nil {
		return err
	}
	s.wrapRegExpMethods(proto)
	return rt.GlobalObject().Set("RegExp", wrapped)
}

// wrapRegExpMethods guards RegExp.prototype[Symbol.replace] and
// [Symbol.split], which code can call directly rather than through the
// String methods. For any receiver but a RegExp that matches with the
// built-in exec, goja takes the spec's generic path, which walks the
// lengths of the objects that receiver's exec returns (captures of any
// count, matches of any length): such receivers are refused.
func (s *sandbox) wrapRegExpMethods(proto *goja.Object) {
	rt := s.rt
	exec := proto.Get("exec")
	species := rt.ToValue(goja.SymSpecies)
	standard := s.standardRegExp(proto)
	plain := func(what string, this goja.Value, split bool) {
		o, ok := this.(*goja.Object)
		if !ok || o.ClassName() != "RegExp" {
			s.fail("%s: the receiver must be a RegExp in this sandbox", what)
		}
		if v, accessor, _ := s.stableProp(o, rt.ToValue("exec")); accessor || v == nil || !v.SameAs(exec) {
			s.fail("%s: a RegExp with its own exec is not supported in this sandbox", what)
		}
		standard(what, o)
		if !split {
			return
		}
		// split builds its matcher with the receiver's species constructor.
		c, accessor, _ := s.stableProp(o, rt.ToValue("constructor"))
		if accessor {
			s.fail("%s: a RegExp with a constructor getter is not supported in this sandbox", what)
		}
		if co, ok := c.(*goja.Object); ok {
			if sp, accessor, _ := s.stableProp(co, species); accessor || (defined(sp) && !goja.IsNull(sp)) {
				s.fail("%s: a RegExp with its own species constructor is not supported in this sandbox", what)
			}
		}
	}
	for _, m := range []struct {
		sym  *goja.Symbol
		name string
	}{{goja.SymMatch, "match"}, {goja.SymMatchAll, "matchAll"}, {goja.SymSearch, "search"}} {
		what := "RegExp.prototype[Symbol." + m.name + "]"
		s.wrapSymbol(proto, m.sym, func(c *goja.FunctionCall) {
			if o, ok := c.This.(*goja.Object); ok && o.ClassName() == "RegExp" {
				standard(what, o)
			}
		})
	}
	s.wrapSymbol(proto, goja.SymReplace, func(c *goja.FunctionCall) {
		plain("RegExp.prototype[Symbol.replace]", c.This, false)
		setArg(c, 0, toStr(arg(c.Arguments, 0)))
		s.guardReplacement(c, 1, "RegExp.prototype[Symbol.replace]")
	})
	s.wrapSymbol(proto, goja.SymSplit, func(c *goja.FunctionCall) {
		plain("RegExp.prototype[Symbol.split]", c.This, true)
		str := toStr(arg(c.Arguments, 0))
		setArg(c, 0, str)
		n := float64(s.strLen(str)) + 1
		if lim := arg(c.Arguments, 1); defined(lim) {
			lim = toNum(lim)
			setArg(c, 1, lim)
			n = min(n, float64(uint32(lim.ToInteger())))
		}
		s.checkArray("RegExp.prototype[Symbol.split]", n)
	})
}

// regExpFlags are the properties of RegExp.prototype that goja's matching
// reads on its generic path (which it takes for any RegExp it does not know
// to be unchanged).
var regExpFlags = []string{"exec", "flags", "global", "ignoreCase", "multiline", "dotAll", "unicode", "sticky", "hasIndices", "source"}

// standardRegExp returns a check that a RegExp is matched as its pattern
// says: it has no own property but lastIndex, its prototype is
// RegExp.prototype, and that prototype's flags and exec are the originals.
// Otherwise goja takes the spec's generic path, which reads the flags
// through the object: a RegExp /x/ with an own `flags` (or `global`) saying
// "g" made "xx".match(r) call the non-global exec forever, collecting its
// first match in a Go loop no limit could stop.
func (s *sandbox) standardRegExp(proto *goja.Object) func(what string, o *goja.Object) {
	rt := s.rt
	// parts reads a descriptor's own get, set and value (a fresh object
	// from the original getOwnPropertyDescriptor: no code runs).
	parts := func(name string) (p [3]goja.Value, found bool) {
		d := call(s.ownDesc, goja.Undefined(), proto, rt.ToValue(name))
		if !defined(d) {
			return p, false
		}
		desc := d.ToObject(rt)
		for _, k := range desc.GetOwnPropertyNames() {
			switch k {
			case "get":
				p[0] = desc.Get(k)
			case "set":
				p[1] = desc.Get(k)
			case "value":
				p[2] = desc.Get(k)
			}
		}
		return p, true
	}
	orig := map[string][3]goja.Value{}
	for _, name := range regExpFlags {
		if p, found := parts(name); found {
			orig[name] = p
		}
	}
	same := func(a, b [3]goja.Value) bool {
		for i := range a {
			if (a[i] == nil) != (b[i] == nil) || a[i] != nil && !a[i].SameAs(b[i]) {
				return false
			}
		}
		return true
	}
	return func(what string, o *goja.Object) {
		for _, k := range o.GetOwnPropertyNames() {
			if k != "lastIndex" {
				s.fail("%s: a RegExp with its own %q property is not supported in this sandbox; use a plain RegExp", what, k)
			}
		}
		if len(o.Symbols()) > 0 {
			s.fail("%s: a RegExp with its own symbol properties is not supported in this sandbox; use a plain RegExp", what)
		}
		if p := o.Prototype(); p == nil || !p.SameAs(proto) {
			s.fail("%s: a RegExp with another prototype is not supported in this sandbox; use a plain RegExp", what)
		}
		for _, name := range regExpFlags {
			p, found := parts(name)
			if o, had := orig[name]; had != found || had && !same(o, p) {
				s.fail("%s: RegExp.prototype.%s was changed, which the sandbox does not match with; restore it", what, name)
			}
		}
	}
}

// installPerElement wraps the builtins that make an object for every own
// key or element of their argument in one call: Object.keys, values,
// entries, getOwnPropertyNames, getOwnPropertyDescriptors, assign, freeze
// and seal and Reflect.ownKeys (a key string, an entry array, a property or
// a descriptor per key), and Promise.all, allSettled, any and race (a
// promise and its reactions per element). A string has a key per
// character: Object.entries of a string within the string limit allocated
// 5.9 GB, Promise.all of an array within the array limit 4.7 GB for a
// minute, and the interrupt cannot stop a builtin. Where the count is known
// without running code (a string's or an array's length) it is checked;
// other objects hold every key they have in memory the cell paid for.
func (s *sandbox) installPerElement() {
	keys := func(what string, v goja.Value) {
		if n := s.elementCount(what, v); n > float64(s.lim.maxKeys) {
			s.fail("%s: %.0f keys is over the sandbox's limit of %d for one call", what, n, s.lim.maxKeys)
		}
	}
	object := s.obj("Object")
	for _, m := range []string{"keys", "values", "entries", "getOwnPropertyNames", "getOwnPropertyDescriptors", "freeze", "seal"} {
		what := "Object." + m
		s.wrap(object, m, func(c *goja.FunctionCall) { keys(what, arg(c.Arguments, 0)) })
	}
	s.wrap(object, "assign", func(c *goja.FunctionCall) {
		for _, v := range c.Arguments[min(1, len(c.Arguments)):] {
			keys("Object.assign", v)
		}
	})
	s.wrap(s.obj("Reflect"), "ownKeys", func(c *goja.FunctionCall) { keys("Reflect.ownKeys", arg(c.Arguments, 0)) })
	promise := s.obj("Promise")
	for _, m := range []string{"all", "allSettled", "any", "race"} {
		what := "Promise." + m
		s.wrap(promise, m, func(c *goja.FunctionCall) {
			if n := s.elementCount(what, arg(c.Arguments, 0)); n > float64(s.lim.maxPromises) {
				s.fail("%s: %.0f elements is over the sandbox's limit of %d for one call", what, n, s.lim.maxPromises)
			}
		})
	}
}

// elementCount is how many own keys (or elements) v has, as far as that
// is known without running code: a string's length, or the length of an
// array, a String object or an arguments object (an array-like's length is
// any number, not its count of keys); 0 otherwise.
func (s *sandbox) elementCount(what string, v goja.Value) float64 {
	switch x := v.(type) {
	case goja.String:
		return float64(x.Length())
	case *goja.Object:
		switch x.ClassName() {
		case "Array", "String", "Arguments":
			return s.lengthOf(what, x)
		}
	}
	return 0
}
