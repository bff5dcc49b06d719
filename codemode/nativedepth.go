package codemode

import (
	"strings"
	"sync"

	"github.com/dop251/goja"
)

// Calls between built-in functions nest in Go, not on goja's call stack.
//
// goja counts a call against SetMaxCallStackSize when JavaScript code makes
// it; a built-in (a Go function) that calls another callable from Go — a
// conversion calling toString or valueOf, a getter, a bound function calling
// its target, Function.prototype.call — pushes nothing. A cycle made only of
// built-ins therefore recursed in Go until the goroutine's stack passed
// 1 GB, which is a fatal error that ends the process, not a panic anything
// can recover: `o.toString = Function.prototype.call.bind(String, null, o);
// String(o)`, or `o.toString = Object.prototype.toLocaleString; String(o)`.
//
// So every built-in function code can reach is a Go function of the
// sandbox's that counts how deeply such functions are nested
// (sandbox.native): the builtins' methods, getters and setters are replaced
// by counting stand-ins when the runtime is built (guardBuiltins), and the
// sandbox's own functions (its wrappers, console, the tool handles, results)
// are made by sandbox.native. A bound function calls its target from Go: a
// target that counts, or a JavaScript function (a frame goja counts), ends
// any cycle; any other target (a constructor such as String, or one of the
// few methods left as they are, below) is bound through a strict JavaScript
// function that calls it, so the cycle has a frame goja counts.
//
// Past maxNativeDepth the cell is aborted with ReasonCallDepth, as deep
// JavaScript recursion is.

// maxNativeDepth caps built-in calls nested in one another. Each level
// holds about a kilobyte of Go stack; legitimate code nests them about as
// deep as its JavaScript recursion (a recursive function that calls map).
const maxNativeDepth = 10_000

// keptBuiltins are builtins left unreplaced: goja takes its fast paths only
// while these are its own functions (a RegExp is matched on the spec's
// generic path, an exec call per position, once RegExp.prototype.exec or a
// flag getter is redefined; spreads, Array.from and new Set/Map walk arrays
// directly only while their iterator and adder are the originals). None of
// them calls code of the cell's unless bound, and bind takes care of that.
//
// Nor are Math's functions and Date.prototype's methods but toJSON and
// [Symbol.toPrimitive] (each a Go function and a function object more per
// runtime, for nothing): the others take a Date as this (or ignore it) and
// convert only their arguments, so when they are called from Go (as a
// getter, a setter, a conversion) nothing they call calls them again
// except through a function that counts.
var keptBuiltins = `[
  [RegExp.prototype, ["exec", "global", "multiline", "ignoreCase", "unicode", "sticky"]],
  [Array.prototype, ["values", Symbol.iterator]],
  [Map.prototype, ["set"]], [WeakMap.prototype, ["set"]],
  [Set.prototype, ["add", "has", "values", "keys"]], [WeakSet.prototype, ["add"]],
]`

var (
	guardProgram = sync.OnceValue(func() *goja.Program {
		return goja.MustCompile("setup", `(function (guard) {
  "use strict";
  const desc = Object.getOwnPropertyDescriptor, define = Object.defineProperty, keys = Reflect.ownKeys;
  const kept = new Map(`+keptBuiltins+`);
  const seen = new Set();
  // Prototypes no global names: the iterators', %IteratorPrototype% and
  // the generators'.
  const hidden = [[][Symbol.iterator](), new Map().entries(), new Set().values(), ""[Symbol.iterator](),
    "a".matchAll(/a/g)].map(Object.getPrototypeOf);
  hidden.push(Object.getPrototypeOf(hidden[0]), Object.getPrototypeOf(function* () {}).prototype);
  const visit = o => {
    if (o === null || (typeof o !== "object" && typeof o !== "function") || seen.has(o)) return;
    seen.add(o);
    const skip = kept.get(o) || [];
    for (const k of keys(o)) {
      if (k === "constructor" || k === "prototype" || skip.includes(k) || o === Math ||
          o === Date.prototype && k !== "toJSON" && k !== Symbol.toPrimitive) continue;
      const d = desc(o, k);
      let changed = false;
      if ("value" in d) {
        const v = d.value;
        if (typeof v === "function") {
          if (desc(v, "prototype") !== undefined) { visit(v); continue; }
          d.value = guard(v);
          changed = true;
        } else if (typeof v === "object") {
          visit(v);
        }
      } else {
        if (d.get) { d.get = guard(d.get); changed = true; }
        if (d.set) { d.set = guard(d.set); changed = true; }
      }
      if (changed) {
        try { define(o, k, d); } catch (e) {} // non-configurable: left as it is
      }
    }
    if (typeof o === "function") visit(o.prototype);
  };
  visit(globalThis);
  hidden.forEach(visit);
})`, true)
	})
	boundTargetProgram = sync.OnceValue(func() *goja.Program {
		return goja.MustCompile("setup", `(function (apply, construct, define) {
  return function (T, name, length, prototype) {
    const t = function () {
      "use strict";
      return new.target === undefined ? apply(T, this, arguments) : construct(T, arguments, new.target === t ? T : new.target);
    };
    define(t, "name", { value: name });
    define(t, "length", { value: length });
    define(t, "prototype", { value: prototype });
    return t;
  };
})`, true)
	})
)

// native makes f a function code can call whose calls count towards
// maxNativeDepth (see above).
func (s *sandbox) native(f func(goja.FunctionCall) goja.Value) goja.Value {
	v := s.rt.ToValue(func(c goja.FunctionCall) goja.Value {
		if s.depth >= maxNativeDepth {
			if s.abort != nil {
				s.abort(ReasonCallDepth)
			}
			panic(s.rt.NewTypeError("built-in functions called one another deeper than %d levels", maxNativeDepth))
		}
		s.depth++
		defer func() { s.depth-- }()
		return f(c)
	})
	if s.counted == nil {
		s.counted = map[*goja.Object]bool{}
	}
	s.counted[v.(*goja.Object)] = true
	return v
}

// guardBuiltins replaces every builtin method, getter and setter (but
// keptBuiltins) by a counting stand-in. It runs first, on the pristine
// builtins: the sandbox's checks then hold the stand-ins as the originals.
func (s *sandbox) guardBuiltins() error {
	rt := s.rt
	memo := map[*goja.Object]goja.Value{}
	guard := rt.ToValue(func(c goja.FunctionCall) goja.Value {
		v := arg(c.Arguments, 0)
		o, ok := v.(*goja.Object)
		if !ok {
			return v
		}
		if g, ok := memo[o]; ok {
			return g // the same function under two names stays one
		}
		f, ok := o.Export().(func(goja.FunctionCall) goja.Value)
		if !ok {
			return v
		}
		g := like(s.native(f), v)
		memo[o] = g
		return g
	})
	fn, err := rt.RunProgram(guardProgram())
	if err != nil {
		return err
	}
	walk, _ := goja.AssertFunction(fn)
	if _, err := walk(goja.Undefined(), guard); err != nil {
		return err
	}
	mk, err := rt.RunProgram(boundTargetProgram())
	if err != nil {
		return err
	}
	mkf, _ := goja.AssertFunction(mk)
	reflect, object := s.obj("Reflect"), s.obj("Object")
	t, err := mkf(goja.Undefined(), reflect.Get("apply"), reflect.Get("construct"), object.Get("defineProperty"))
	if err != nil {
		return err
	}
	s.boundTarget, _ = goja.AssertFunction(t)
	s.sourceOf, _ = goja.AssertFunction(s.obj("Function").Get("prototype").ToObject(rt).Get("toString"))
	return nil
}

// bindTarget is what bind binds for target: target itself when calling it
// counts (a counting builtin, or JavaScript), else a JavaScript function
// calling it, with its name, length and prototype.
func (s *sandbox) bindTarget(target goja.Value) goja.Value {
	o, ok := target.(*goja.Object)
	if !ok || s.counted[o] || s.boundTarget == nil {
		return target
	}
	if _, isFn := goja.AssertFunction(o); !isFn {
		return target
	}
	// Only a Go function's source ends so: in JavaScript "[native code]"
	// is not a statement, and no comment can end before the last brace.
	if !strings.HasSuffix(call(s.sourceOf, o).String(), "() { [native code] }") {
		return target
	}
	return call(s.boundTarget, goja.Undefined(), o, o.Get("name"), o.Get("length"), o.Get("prototype"))
}
