package codemode

import (
	"sync"

	"github.com/dop251/goja"
)

// Loops of goja's builtins over iterables and collections: they run in Go
// and never look at the interrupt flag.

var (
	// The prototypes of the built-in iterators, read before any builtin
	// is wrapped.
	iteratorsProgram = sync.OnceValue(func() *goja.Program {
		return goja.MustCompile("setup", `[[][Symbol.iterator](), ""[Symbol.iterator](), new Map()[Symbol.iterator](),
  new Set()[Symbol.iterator](), "a".matchAll(/a/g)].map(Object.getPrototypeOf)`, true)
	})
	// collectionProgram makes a stand-in for the collection constructor
	// Orig that checks its argument first and keeps what code sees of Orig:
	// new.target (so subclasses work), the prototype, statics such as
	// Symbol.species, the name and the length. When called it reads no
	// global (a cell may have replaced any).
	collectionProgram = sync.OnceValue(func() *goja.Program {
		return goja.MustCompile("setup", `(function (check, Orig, construct, name) {
  const C = {[name]: function () {
    check(new.target, arguments[0]);
    return construct(Orig, arguments, new.target);
  }}[name];
  for (const key of Reflect.ownKeys(Orig)) {
    if (key !== "prototype") Object.defineProperty(C, key, Object.getOwnPropertyDescriptor(Orig, key));
  }
  Object.defineProperty(C, "prototype", {value: Orig.prototype, writable: false, enumerable: false, configurable: false});
  Object.defineProperty(Orig.prototype, "constructor", {value: C, writable: true, enumerable: false, configurable: true});
  return C;
})`, true)
	})
)

// installIterators makes every step of a built-in iterator (of arrays,
// strings, maps, sets and matchAll) end a cell that a limit aborted. goja
// consumes iterables in Go loops that never look at the interrupt flag:
// spread and rest (`[...s]`, `const [a, ...r] = s`, `f(...s)`), Array.from,
// new Set and new Map, Promise.all, Object.fromEntries. One such loop over
// a string or an array within the sandbox's limits allocated over 600 MiB
// and ran for seconds before the memory or CPU limit could stop it, and
// with the original array iterator (every arguments object holds it) a
// sparse array of length 2**32-1 was walked to the end. The check is the
// step's: whatever loop drives it stops at the first step after the abort,
// with the abort's reason (the panic is not a JavaScript exception, so no
// catch or finally runs).
func (s *sandbox) installIterators() error {
	protos, err := s.rt.RunProgram(iteratorsProgram())
	if err != nil {
		return err
	}
	for _, p := range exportValues(s.rt, protos) {
		s.wrap(p.ToObject(s.rt), "next", func(*goja.FunctionCall) { s.checkAborted() })
	}
	return nil
}

// checkAborted ends the running cell's JavaScript when a limit aborted it:
// a Go loop of a builtin that calls back into the sandbox does not reach
// goja's interrupt check until the loop ends.
func (s *sandbox) checkAborted() {
	if s.aborted == nil {
		return
	}
	if r := s.aborted(); r != "" {
		panic(abortSignal(r))
	}
}

// installCollections bounds the entries one call of new Set, Map, WeakSet
// or WeakMap makes from an array or a string (about 200 bytes each, in a Go
// loop): new Set(a) of an array within the array limit held 150 MiB more
// than the 64 MiB limit before the watcher could stop it, and with the
// original array iterator (every arguments object holds it) Set and WeakSet
// skip the iterator, so no step checks for an abort. Other iterables are
// walked step by step, and the steps check (installIterators).
func (s *sandbox) installCollections() error {
	rt := s.rt
	mk, err := rt.RunProgram(collectionProgram())
	if err != nil {
		return err
	}
	fn, _ := goja.AssertFunction(mk)
	construct := s.obj("Reflect").Get("construct")
	for _, name := range []string{"Set", "Map", "WeakSet", "WeakMap"} {
		what := "new " + name
		check := s.native(func(c goja.FunctionCall) goja.Value {
			if !defined(arg(c.Arguments, 0)) {
				s.fail("Constructor %s requires 'new'", name)
			}
			if n := s.elementCount(what, arg(c.Arguments, 1)); n > float64(s.lim.maxEntries) {
				s.fail("%s: %.0f entries is over the sandbox's limit of %d for one call; add them in a loop", what, n, s.lim.maxEntries)
			}
			return goja.Undefined()
		})
		c, err := fn(goja.Undefined(), check, s.obj(name), construct, rt.ToValue(name))
		if err != nil {
			return err
		}
		if err := rt.GlobalObject().Set(name, c); err != nil {
			return err
		}
	}
	return nil
}
