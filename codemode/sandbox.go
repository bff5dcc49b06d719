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
}

func limitsFor(memory int64) sandboxLimits {
	l := sandboxLimits{maxString: int(memory / 8), maxArray: int(memory / 64)}
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

// wrap replaces o[name] with a function that runs check, then the original.
func (s *sandbox) wrap(o *goja.Object, name string, check func(this goja.Value, args []goja.Value) []goja.Value) {
	orig, ok := goja.AssertFunction(o.Get(name))
	if !ok {
		return
	}
	_ = o.Set(name, s.rt.ToValue(func(c goja.FunctionCall) goja.Value {
		args := c.Arguments
		if na := check(c.This, args); na != nil {
			args = na
		}
		return call(orig, c.This, args...)
	}))
}

func (s *sandbox) wrapSymbol(o *goja.Object, sym *goja.Symbol, check func(this goja.Value, args []goja.Value) []goja.Value) {
	orig, ok := goja.AssertFunction(o.GetSymbol(sym))
	if !ok {
		return
	}
	_ = o.SetSymbol(sym, s.rt.ToValue(func(c goja.FunctionCall) goja.Value {
		check(c.This, c.Arguments)
		return call(orig, c.This, c.Arguments...)
	}))
}

// lengthOf is ToLength(o.length) as a float (it may exceed int64).
func (s *sandbox) lengthOf(v goja.Value) float64 {
	if v == nil || goja.IsUndefined(v) || goja.IsNull(v) {
		return 0
	}
	o := v.ToObject(s.rt)
	n := o.Get("length")
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
	stub := func(what string) goja.Value {
		return rt.ToValue(func(goja.FunctionCall) goja.Value {
			s.fail("%s: code generation from strings is disabled in this sandbox; write the code in the cell", what)
			return nil
		})
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
	s.wrap(fnProto, "apply", func(_ goja.Value, a []goja.Value) []goja.Value {
		if list := arg(a, 1); defined(list) && !goja.IsNull(list) {
			if n := s.lengthOf(list); n > float64(s.lim.maxArgs) {
				s.fail("Function.prototype.apply: %.0f arguments is over the sandbox's limit of %d", n, s.lim.maxArgs)
			}
		}
		return nil
	})
	s.wrapBind(fnProto)
	s.fnToString, _ = goja.AssertFunction(fnProto.Get("toString"))
	_ = fnProto.Set("toString", rt.ToValue(func(c goja.FunctionCall) goja.Value {
		return rt.ToValue(strings.Replace(call(s.fnToString, c.This).String(), fnPrefix, "", 1))
	}))
	reflect := s.obj("Reflect")
	s.wrap(reflect, "apply", func(_ goja.Value, a []goja.Value) []goja.Value {
		s.checkArgs("Reflect.apply", arg(a, 2))
		return nil
	})
	s.wrap(reflect, "construct", func(_ goja.Value, a []goja.Value) []goja.Value {
		s.checkArgs("Reflect.construct", arg(a, 1))
		return nil
	})

	s.installString()
	s.installArray()
	s.installJSON()
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
		if n := s.lengthOf(list); n > float64(s.lim.maxArgs) {
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
	_ = fnProto.Set("bind", rt.ToValue(func(c goja.FunctionCall) goja.Value {
		depth := int64(0)
		if o, ok := c.This.(*goja.Object); ok {
			if d := o.GetSymbol(s.bindDepth); d != nil && !goja.IsUndefined(d) {
				depth = d.ToInteger()
			}
		}
		if depth >= maxBindDepth {
			s.fail("Function.prototype.bind: bound functions are limited to %d levels", maxBindDepth)
		}
		bound := call(orig, c.This, c.Arguments...)
		if o, ok := bound.(*goja.Object); ok {
			_ = o.DefineDataPropertySymbol(s.bindDepth, rt.ToValue(depth+1), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
		}
		return bound
	}))
}

func (s *sandbox) installString() {
	proto := s.obj("String").Get("prototype").ToObject(s.rt)
	s.wrap(proto, "repeat", func(this goja.Value, a []goja.Value) []goja.Value {
		if n := arg(a, 0).ToFloat(); n > 0 {
			s.checkString("String.prototype.repeat", float64(s.strLen(this))*n)
		}
		return nil
	})
	for _, m := range []string{"padStart", "padEnd"} {
		s.wrap(proto, m, func(_ goja.Value, a []goja.Value) []goja.Value {
			s.checkString("String.prototype."+m, arg(a, 0).ToFloat())
			return nil
		})
	}
	for _, m := range []string{"replace", "replaceAll"} {
		s.wrap(proto, m, func(this goja.Value, a []goja.Value) []goja.Value {
			repl := arg(a, 1)
			if _, isFn := goja.AssertFunction(repl); isFn {
				return nil // each replacement is computed by code the limits watch
			}
			text := this.String()
			l := float64(s.strLen(this))
			r := float64(s.strLen(repl))
			if r == 0 {
				return nil
			}
			if dollars := strings.Count(repl.String(), "$"); dollars > 0 {
				r += float64(dollars) * l // $& and $1 insert matched text
			}
			n := l + 1 // a regular expression may match at every position
			if pat := arg(a, 0); !isRegExp(pat) {
				p := pat.String()
				n = float64(strings.Count(text, p))
				if m == "replace" {
					n = min(n, 1)
				}
			}
			s.checkString("String.prototype."+m, l+n*r)
			return nil
		})
	}
	s.wrap(proto, "split", func(this goja.Value, a []goja.Value) []goja.Value {
		sep := arg(a, 0)
		if !defined(sep) {
			return nil
		}
		l := float64(s.strLen(this))
		n := l + 1
		if !isRegExp(sep) {
			if p := sep.String(); p != "" {
				n = float64(strings.Count(this.String(), p)) + 1
			} else {
				n = l
			}
		}
		if lim := arg(a, 1); defined(lim) {
			n = min(n, float64(uint32(lim.ToInteger())))
		}
		s.checkArray("String.prototype.split", n)
		return nil
	})
	s.wrap(proto, "concat", func(this goja.Value, a []goja.Value) []goja.Value {
		n := float64(s.strLen(this))
		for _, v := range a {
			n += float64(s.strLen(v))
		}
		s.checkString("String.prototype.concat", n)
		return nil
	})
	s.wrap(proto, "normalize", func(this goja.Value, _ []goja.Value) []goja.Value {
		s.checkString("String.prototype.normalize", float64(s.strLen(this))*4)
		return nil
	})
	for _, m := range []string{"match", "matchAll", "search"} {
		s.wrap(proto, m, func(_ goja.Value, a []goja.Value) []goja.Value {
			if p := arg(a, 0); defined(p) && !goja.IsNull(p) && !isRegExp(p) {
				if err := checkPattern(p.String(), ""); err != nil {
					s.fail("String.prototype.%s: %v", m, err)
				}
			}
			return nil
		})
	}
	s.wrapSymbol(proto, goja.SymIterator, func(this goja.Value, _ []goja.Value) []goja.Value {
		s.checkArray("iterating a string", float64(s.strLen(this)))
		return nil
	})
}

func (s *sandbox) installArray() {
	rt := s.rt
	ctor := s.obj("Array")
	proto := ctor.Get("prototype").ToObject(rt)
	for _, m := range arrayMethods {
		name := "Array.prototype." + m
		s.wrap(proto, m, func(this goja.Value, a []goja.Value) []goja.Value {
			n := s.lengthOf(this)
			switch m {
			case "push", "unshift":
				n += float64(len(a))
			case "concat":
				for _, v := range a {
					if o, ok := v.(*goja.Object); ok && o.ClassName() == "Array" {
						n += s.lengthOf(o)
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
					sep = float64(s.strLen(v))
				}
				s.checkString(name, max(n-1, 0)*sep)
			case "flat":
				depth := 1.0
				if v := arg(a, 0); defined(v) {
					depth = v.ToFloat()
				}
				depth = min(depth, maxNesting)
				s.checkFlat(this, int(depth), name)
				return []goja.Value{rt.ToValue(depth)}
			case "flatMap":
				if fn, ok := goja.AssertFunction(arg(a, 0)); ok {
					out := append([]goja.Value{rt.ToValue(func(c goja.FunctionCall) goja.Value {
						v := call(fn, c.This, c.Arguments...)
						if o, ok := v.(*goja.Object); ok && o.ClassName() == "Array" {
							s.checkArray(name, s.lengthOf(o))
						}
						return v
					})}, a[1:]...)
					return out
				}
			}
			return nil
		})
	}
	// join and toString recurse in Go through nested arrays.
	for _, m := range []string{"join", "toString", "toLocaleString"} {
		orig, _ := goja.AssertFunction(proto.Get(m))
		_ = proto.Set(m, rt.ToValue(func(c goja.FunctionCall) goja.Value {
			if s.joinDepth >= maxNesting {
				s.fail("Array.prototype.%s: arrays nested deeper than %d levels", m, maxNesting)
			}
			s.joinDepth++
			defer func() { s.joinDepth-- }()
			return call(orig, c.This, c.Arguments...)
		}))
	}
	s.wrapSymbol(proto, goja.SymIterator, func(this goja.Value, _ []goja.Value) []goja.Value {
		s.checkArray("iterating an array", s.lengthOf(this))
		return nil
	})
	s.wrap(ctor, "from", func(_ goja.Value, a []goja.Value) []goja.Value {
		items := arg(a, 0)
		if o, ok := items.(*goja.Object); ok {
			if it := o.GetSymbol(goja.SymIterator); it == nil || goja.IsUndefined(it) {
				s.checkArray("Array.from", s.lengthOf(o))
			}
		}
		return nil
	})
}

// checkFlat bounds the work of flat(depth): every nested array it would
// visit must be within the array limit, and so must the total.
func (s *sandbox) checkFlat(v goja.Value, depth int, name string) {
	total := 0.0
	var walk func(o *goja.Object, d int)
	walk = func(o *goja.Object, d int) {
		n := s.lengthOf(o)
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
	_ = j.Set("parse", rt.ToValue(func(c goja.FunctionCall) goja.Value {
		if jsonDepth(arg(c.Arguments, 0).String(), maxNesting) {
			panic(rt.NewTypeError(fmt.Sprintf("JSON.parse: the text nests deeper than %d levels, which the sandbox does not parse", maxNesting)))
		}
		return call(parse, c.This, c.Arguments...)
	}))
	_ = j.Set("stringify", rt.ToValue(func(c goja.FunctionCall) goja.Value {
		e := &encoder{rt: rt, limit: s.lim.maxString, maxArray: s.lim.maxArray}
		switch r := arg(c.Arguments, 1).(type) {
		case *goja.Object:
			if fn, ok := goja.AssertFunction(r); ok {
				e.replacer = fn
			} else if r.ClassName() == "Array" {
				e.allow = map[string]bool{}
				for _, v := range exportValues(rt, r) {
					e.allow[v.String()] = true
				}
			}
		}
		switch sp := arg(c.Arguments, 2).Export().(type) {
		case int64:
			e.indent = strings.Repeat(" ", int(min(max(sp, 0), 10)))
		case float64:
			e.indent = strings.Repeat(" ", int(min(max(sp, 0), 10)))
		case string:
			e.indent = sp[:min(len(sp), 10)]
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
	}))
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
	check := rt.ToValue(func(c goja.FunctionCall) goja.Value {
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
	return rt.GlobalObject().Set("RegExp", wrapped)
}
