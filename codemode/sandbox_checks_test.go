package codemode_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/codemode"
)

// TestSandbox_BuiltinsCannotBeTrickedPastTheirChecks: every builtin the
// sandbox checks must do no more than the check allowed. A value whose
// conversion runs code (valueOf, toString, a getter) can answer the check
// with one size and the builtin with another; some builtins take their
// size from somewhere the checks did not look (String.raw, a spreadable
// object in concat, RegExp methods called directly, a RegExp with its own
// exec). Each cell below would build a string or array over the limits
// (131,072 characters, 16,384 elements at 1 MiB), or, with real sizes, run
// in Go for hours or exhaust the process's memory: the sandbox must refuse
// it with a TypeError before the builtin runs, and the next cell works.
func TestSandbox_BuiltinsCannotBeTrickedPastTheirChecks(t *testing.T) {
	cm := newCM(t, codemode.Config{MemoryLimit: 1 << 20, CPUTimeLimit: time.Minute, CellTimeout: 10 * time.Minute})
	for _, tt := range []struct{ name, code string }{
		// Lengths read through code.
		{"array-like length getter", `let c = 0; Array.prototype.includes.call({get length() { return c++ ? 1e6 : 0 }}, 1)`},
		{"array-like length object", `let c = 0; Array.prototype.fill.call({length: {valueOf() { return c++ ? 1e6 : 0 }}}, 1)`},
		{"inherited length getter", `let c = 0; Object.defineProperty(Number.prototype, "length", {get() { return c++ ? 1e6 : 0 }, configurable: true}); try { Array.prototype.indexOf.call(5, 1) } finally { delete Number.prototype.length }`},
		{"apply with a length getter", `let c = 0; Math.max.apply(null, {get length() { return c++ ? 1e6 : 0 }})`},
		{"Array.from with an iterator getter", `let c = 0; Array.from({get [Symbol.iterator]() { return c++ ? undefined : function* () {} }, length: 1e6})`},
		// Sizes the checks did not look at.
		{"concat of a spreadable array-like", `[].concat({length: 1e6, [Symbol.isConcatSpreadable]: true}).length`},
		{"concat with a spreadable getter", `[].concat({length: 1e6, get [Symbol.isConcatSpreadable]() { return true }}).length`},
		{"String.raw of a long raw", `String.raw({raw: {length: 1e6}}).length`},
		{"split separator", `let c = 0; "xy".repeat(60000).split({toString() { return c++ ? "" : "z" }}).length`},
		{"JSON.stringify with a huge key list", `const keys = []; keys.length = 1e6; JSON.stringify({}, keys)`},
		// RegExp methods reached directly.
		{"Symbol.replace called directly", `/a/g[Symbol.replace]("a".repeat(3), "$&".repeat(50000)).length`},
		{"Symbol.split called directly", `RegExp.prototype[Symbol.split].call(/(?:)/, "x".repeat(100000)).length`},
		{"a RegExp with its own exec", `const r = /a/; r.exec = function () { return {length: 1e6, 0: "a", index: 0} }; "a".replace(r, "b")`},
		{"Symbol.replace on a fake RegExp", `RegExp.prototype[Symbol.replace].call({exec: () => null, flags: ""}, "a", "b")`},
		{"split with a species constructor", `const r = /a/; r.constructor = {[Symbol.species]: function () { return {exec: () => null, lastIndex: 0, flags: ""} }}; "aaa".split(r)`},
	} {
		c := runCell(t, cm, "s", tt.code)
		if c.Status != codemode.StatusError || c.Error == nil || c.Error.Name != "TypeError" || !strings.Contains(c.Error.Message, "sandbox") {
			t.Errorf("%s: %s\nwant a TypeError from the sandbox's checks", tt.name, c.JSON())
		}
		if next := runCell(t, cm, "s", "[1, 2, 3].map(x => x * 2)"); jsonText(resultOf(t, next)) != "[2,4,6]" {
			t.Fatalf("after %s: %s", tt.name, next.JSON())
		}
	}
	// An argument whose conversion runs code is converted once: the
	// builtin uses the value the check measured (the first one each
	// toString or valueOf below returns).
	for _, tt := range []struct{ name, code, want string }{
		{"repeat count", `let c = 0; "x".repeat({valueOf() { return c++ ? 1e6 : 1 }}).length`, "1"},
		{"repeat receiver", `let c = 0; String.prototype.repeat.call({toString() { return c++ ? "x".repeat(1000) : "x" }}, 1000).length`, "1000"},
		{"padEnd length", `let c = 0; "x".padEnd({valueOf() { return c++ ? 1e6 : 1 }}).length`, "1"},
		{"join separator", `let c = 0; new Array(1000).join({toString() { return c++ ? "x".repeat(1000) : "" }}).length`, "0"},
		{"split limit", `let c = 0; "x".repeat(100000).split("", {valueOf() { return c++ ? 1e6 : 1 }}).length`, "1"},
		{"concat argument", `let c = 0; "".concat({toString() { return c++ ? "x".repeat(100000) : "" }}).length`, "0"},
		{"match pattern", `let c = 0; "aaaa".match({toString() { return c++ ? "(a+)+\\1" : "a" }})`, `["a"]`},
		{"replaceAll replacement", `let c = 0; "a".repeat(1000).replaceAll("a", {toString() { return c++ ? "x".repeat(1000) : "" }}).length`, "0"},
		{"JSON.parse text", `let c = 0; JSON.parse({toString() { return c++ ? "[".repeat(5000) + "]".repeat(5000) : "[]" }})`, "[]"},
	} {
		if c := runCell(t, cm, "s", tt.code); c.Status != codemode.StatusOK || string(c.Result) != tt.want {
			t.Errorf("%s: %s, want result %s", tt.name, c.JSON(), tt.want)
		}
	}
}

// TestSandbox_ReplacementTemplatesExpandAsInJavaScript: the sandbox builds
// replacement templates itself (to count the result as it grows); they
// must expand exactly as JavaScript's do, and a template on a long text is
// refused only when its result really is over the limit.
func TestSandbox_ReplacementTemplatesExpandAsInJavaScript(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	for _, tt := range []struct{ code, want string }{
		{`"John Smith".replace(/(\w+)\s(\w+)/, "$2, $1")`, `"Smith, John"`},
		{"\"abc\".replace(\"b\", \"[$&|$`|$'|$$]\")", `"a[b|a|c|$]c"`},
		{`"2020-01-02".replace(/(?<y>\d+)-(?<m>\d+)-(?<d>\d+)/, "$<d>/$<m>/$<y>")`, `"02/01/2020"`},
		{`"abc".replace(/b/, "$1$<x>$0$9$")`, `"a$1$<x>$0$9$c"`},
		{`"x-y".replace(/(x)(-)(y)/, "$10$03$3$4")`, `"x0yy$4"`},
		{`"ab".replace(/(z)?b/, "[$1]")`, `"a[]"`},
		{`"aaaa".replaceAll("a", "$&$&")`, `"aaaaaaaa"`},
		{`"a-b-c".replace(/-/g, "+")`, `"a+b+c"`},
		{`"a-b-c".replaceAll(/(?<d>-)/g, "[$<d>$<e>]")`, `"a[-]b[-]c"`},
		{"\"héllo wörld\".replace(/ö/, \"[$`|$']\")", `"héllo w[héllo w|rld]rld"`},
		{"\"😀a😀\".replace(\"a\", \"$'$`\")", `"😀😀😀😀"`},
		{`"abc".replace(/b/, m => m.toUpperCase())`, `"aBc"`},
		{`"abc".replace(/x/, "$&$&")`, `"abc"`},
		{`"abc".replace("", "[$']")`, `"[abc]abc"`},
		// A template with $1 over a text of 25,000 characters: the result
		// is 35,000 characters, far under the limit.
		{`"word ".repeat(5000).replace(/(\w+)/g, "<$1>").length`, `35000`},
		{`"a,b".split(/,/)`, `["a","b"]`},
		{`"a1b2c".split(/(\d)/, 3)`, `["a","1","b"]`},
	} {
		if c := runCell(t, cm, "s", tt.code); c.Status != codemode.StatusOK || string(c.Result) != tt.want {
			t.Errorf("%s: %s, want result %s", tt.code, c.JSON(), tt.want)
		}
	}
}

// TestSandbox_LimitHitWhileRenderingTheOutcomeAbortsTheCell: the cell's
// result and a thrown error are read after its code ends, and reading them
// can run the cell's code (a getter, toJSON). A CPU limit hit there must
// abort the cell like any other (reason cpu_time, variables carried over),
// not pass as a plain error or an "internal" failure that silently
// discards the session's variables.
func TestSandbox_LimitHitWhileRenderingTheOutcomeAbortsTheCell(t *testing.T) {
	cm := newCM(t, codemode.Config{CPUTimeLimit: 200 * time.Millisecond, CellTimeout: 10 * time.Minute})
	for _, tt := range []struct{ name, code string }{
		{"thrown value with a looping getter", `var keep = 1; throw {get message() { while (true) {} }}`},
		{"result with a looping toJSON", `var keep = 2; ({toJSON() { while (true) {} }})`},
		{"rejection with a looping name", `var keep = 3; await Promise.reject({message: "m", get name() { for (;;) {} }})`},
	} {
		c := runCell(t, cm, "s", tt.code)
		if c.Status != codemode.StatusAborted || c.Error == nil || c.Error.Reason != codemode.ReasonCPUTime {
			t.Errorf("%s: %s, want aborted for cpu_time", tt.name, c.JSON())
		}
		want := tt.code[len("var keep = "):][:1]
		if next := runCell(t, cm, "s", "keep"); next.Status != codemode.StatusOK || string(next.Result) != want {
			t.Errorf("after %s: %s, want the variable carried over (%s)", tt.name, next.JSON(), want)
		}
	}
}

// TestSandbox_SourceMapCommentsReadNoFile: goja's compiler loads the source
// map named by a `//# sourceMappingURL=` comment on the code's last line
// from the server's disk (relative to the process's directory, so any
// file: /dev/zero would exhaust memory) and remaps positions with it. A
// cell's code must be compiled with source maps off: the map below, which
// names another file for every position, must not change the stack.
func TestSandbox_SourceMapCommentsReadNoFile(t *testing.T) {
	t.Parallel()
	mapFile := filepath.Join(t.TempDir(), "map.json")
	sm := `{"version":3,"sources":["LEAKED.js"],"names":[],"mappings":"AAAA;AACA;AACA;AACA;AACA;AACA"}`
	if err := os.WriteFile(mapFile, []byte(sm), 0o600); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, mapFile)
	if err != nil {
		t.Fatal(err)
	}
	cm := newCM(t, codemode.Config{})
	for _, url := range []string{rel, "data:application/json;base64," + base64.StdEncoding.EncodeToString([]byte(sm))} {
		c := runCell(t, cm, "s", "let d = 1\n\nthrow new Error('x')\n//# sourceMappingURL="+url)
		if c.Error == nil || !strings.Contains(c.Error.Stack, "cell[") || strings.Contains(c.Error.Stack, "LEAKED") {
			t.Errorf("source map %s: %s, want the stack at cell[N]:3", url, c.JSON())
		}
	}
}

// TestSandbox_ThrowingWhileRenderingTheOutcomeKeepsTheEnvironment: reading
// a cell's result or thrown error can run its code (a getter, toString),
// and an exception thrown there reached Go as a panic, taken for an
// internal failure of the interpreter: the session's environment was
// dropped (its variables gone, execution_count back to 1) with only an
// error, or an abort, for the model. The exception must leave the
// environment as it was.
func TestSandbox_ThrowingWhileRenderingTheOutcomeKeepsTheEnvironment(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	wantOK(t, runCell(t, cm, "s", "var kept = 41"))
	count := 1
	for _, code := range []string{
		`const e = new Error('m'); Object.defineProperty(e, 'name', {get() { return {toString() { throw new Error('n') }} }}); throw e`,
		`throw {message: {toString() { throw new Error('m') }}}`,
		`const f = function () {}; Object.defineProperty(f, 'name', {get() { throw new Error('n') }}); f`,
		`({get [Symbol.toStringTag]() { throw new Error('t') }})`,
		`const g = new Error('m'); Object.defineProperty(g, 'message', {get() { throw new Error('m') }}); g`,
		`await Promise.reject({get name() { throw new Error('n') }, message: 'm'})`,
	} {
		c := runCell(t, cm, "s", code)
		count++
		if c.Status == codemode.StatusAborted || c.ExecutionCount != count {
			t.Errorf("cell %q: %s, want it to end without touching the environment", code, c.JSON())
		}
		count = c.ExecutionCount
		next := runCell(t, cm, "s", "kept + 1")
		count++
		if string(next.Result) != "42" || next.ExecutionCount != count || next.Notice != "" {
			t.Fatalf("after %q: %s, want the variable kept and the count going on", code, next.JSON())
		}
	}
}

// TestSandbox_ValuesReadForAPrimitiveAreNotConvertedWhole: where the
// sandbox needs a number or a string of the code (JSON.stringify's
// indentation, an object's Symbol.toStringTag), a value was converted whole
// to Go first: a sparse array of length 2^32-1 asked for 64 GiB and the
// process died.
func TestSandbox_ValuesReadForAPrimitiveAreNotConvertedWhole(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	for _, tt := range []struct{ code, want string }{
		{`const h1 = []; h1.length = 2 ** 32 - 1; JSON.stringify({a: 1}, null, h1)`, `"{\"a\":1}"`},
		{`const h2 = []; h2.length = 2 ** 32 - 1; ({a: 1, [Symbol.toStringTag]: h2})`, `{"a":1}`},
		{`JSON.stringify({a: 1}, null, new Number(2))`, `"{\n  \"a\": 1\n}"`},
		{`JSON.stringify({a: 1}, null, new String("--"))`, `"{\n--\"a\": 1\n}"`},
		{`JSON.stringify({a: 1}, null, "😀😀😀😀😀😀")`, `"{\n😀😀😀😀😀\"a\": 1\n}"`},
	} {
		c := runCell(t, cm, "s", tt.code)
		if c.Status != codemode.StatusOK || string(c.Result) != tt.want {
			t.Errorf("%s: %s, want result %s", tt.code, c.JSON(), tt.want)
		}
	}
}

// TestSandbox_WrappedBuiltinsKeepTheirNamesAndLengths: a builtin the
// sandbox wraps (and the functions it adds) was a Go function to code:
// named "github.com/agentryhq/agentry/codemode.(*sandbox).wrap.func1", of
// length 0, which stacks showed and a helper reading fn.length got wrong.
func TestSandbox_WrappedBuiltinsKeepTheirNamesAndLengths(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	c := runCell(t, cm, "s", `const goNames = [], seen = new Set()
for (const g of Object.getOwnPropertyNames(globalThis)) {
  const v = globalThis[g]
  for (const o of [v, v && v.prototype]) {
    if (!o || (typeof o !== "object" && typeof o !== "function") || seen.has(o)) continue
    seen.add(o)
    for (const k of [...Object.getOwnPropertyNames(o), ...Object.getOwnPropertySymbols(o)]) {
      const d = Object.getOwnPropertyDescriptor(o, k)
      if (typeof d.value === "function" && /github|\.func\d|\(\*/.test(d.value.name)) goNames.push(g + "." + String(k))
    }
  }
}
;[goNames, [[].map, "".repeat, JSON.stringify, JSON.parse, Function.prototype.apply, Reflect.apply, [].join, "".split, Array.from].map(f => f.name + "/" + f.length), results.read.name]`)
	want := `[[],["map/1","repeat/1","stringify/3","parse/2","apply/2","apply/3","join/1","split/2","from/1"],"read"]`
	if got := jsonText(resultOf(t, c)); got != want {
		t.Errorf("names and lengths: %s\nwant %s", got, want)
	}
}

// TestSandbox_RegExpsMatchAsTheirPatternSays: goja matches a RegExp it does
// not know to be unchanged on the spec's generic path, which reads the flags
// through the object. /x/ with an own `flags` or `global` saying "g" made
// "xx".match(r) (and replace) call the non-global exec forever, collecting
// its first match in a Go loop no limit stopped (it ran until killed, past
// a 20 s CPU limit and a 16 MiB memory limit). A RegExp with own properties
// (but lastIndex), another prototype or a changed RegExp.prototype flag is
// refused; plain ones match as before.
func TestSandbox_RegExpsMatchAsTheirPatternSays(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{MemoryLimit: 16 << 20, CPUTimeLimit: 20 * time.Second, CellTimeout: 10 * time.Minute})
	for _, code := range []string{
		`const r = /x/; Object.defineProperty(r, "flags", {value: "g"}); "xx".match(r)`,
		`const r = /x/; Object.defineProperty(r, "global", {value: true}); "xx".replace(r, "y")`,
		`const r = /x/; Object.defineProperty(r, "global", {value: true}); r[Symbol.match]("xx")`,
		`const r = /x/; r.exec = RegExp.prototype.exec; "xx".split(r)`,
		`const r = /x/; Object.defineProperty(r, "flags", {value: "g"}); [..."xx".matchAll(/x/g), ..."xx".matchAll(r)]`,
		`const r = /x/; Object.setPrototypeOf(r, Object.create(RegExp.prototype, {global: {value: true}})); "xx".match(r)`,
		`class R extends RegExp {}; "xx".match(new R("x", "g"))`,
	} {
		c := runCell(t, cm, "s", code)
		if c.Status != codemode.StatusError || c.Error.Name != "TypeError" || !strings.Contains(c.Error.Message, "not supported in this sandbox") {
			t.Errorf("%s: %.300s, want a TypeError", code, c.JSON())
		}
	}
	c := runCell(t, cm, "s", `const g = /x/g; g.lastIndex = 2;
		["xax".match(g), "a-b-c".split(/-/), "aXbX".replace(/x/gi, "$&!"), [..."a1b2".matchAll(/\d/g)].map(m => m[0]), "abc".search(/c/), /b/.test("abc")]`)
	if got := jsonText(resultOf(t, c)); got != `[["x","x"],["a","b","c"],"aX!bX!",["1","2"],2,true]` {
		t.Errorf("plain RegExps: %s", got)
	}
	// A changed prototype is the session's (until a rebuild): refused
	// while it lasts, with a word on what to restore.
	c = runCell(t, cm, "s", `const desc = Object.getOwnPropertyDescriptor(RegExp.prototype, "global");
		Object.defineProperty(RegExp.prototype, "global", {get() { return true }, configurable: true});
		let refused = ""; try { "xx".match(/x/) } catch (e) { refused = e.message }
		Object.defineProperty(RegExp.prototype, "global", desc);
		[refused, "xx".match(/x/g)]`)
	got := resultOf(t, c).([]any)
	if s, _ := got[0].(string); !strings.Contains(s, "RegExp.prototype.global was changed") || jsonText(got[1]) != `["x","x"]` {
		t.Errorf("changed prototype: %s", jsonText(got))
	}
}
