package codemode_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/agentryhq/agentry/codemode"
	"github.com/dop251/goja"
)

// TestRun_StatementEndsTheParserMisplacesRun: the cell rewrite cuts the
// source where a statement ends, and goja's end of some nodes is elsewhere:
// inside the operator of a postfix update written with a space (`i ++`),
// in the next statement after a regular expression with flags, or before
// the `()` of a `new` (so a following `() => 1` lost its parentheses).
// Each cell runs in a new session and must give what the same code gives
// as plain JavaScript.
func TestRun_StatementEndsTheParserMisplacesRun(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	for i, tt := range []struct{ code, want string }{
		// Postfix updates with space or comments before the operator.
		{"let i = 0; i ++; i", "1"},
		{"let i = 0\ni ++\ni", "1"},
		{"let i = 5; i --", "5"},
		{"let i = 5; i --;", "5"},
		{"let i = 0; i /* one */ ++ /* two */; i", "1"},
		{"let o = {y: 1}; o.y --\no.y", "0"},
		{"let a = [1]; let k = 0; a[k] ++; a[0]", "2"},
		{"let i = 0; (i) ++; i", "1"},
		{"let i = 0; ((i)) ++\ni", "1"},
		{"let i = 1; let j = i ++; [i, j]", "[2,1]"},
		{"let i = 1; let j = 2 * i ++\n[i, j]", "[2,2]"},
		{"let i = 1; let j = -i --, k = i ++; [i, j, k]", "[1,-1,0]"},
		{"var i = 0, j = i ++\n[i, j]", "[1,0]"},
		{"let i = 0; if (i < 1) i ++\ni", "1"},
		{"let i = 0; if (i) i --; else i ++\ni", "1"},
		{"let i = 0; for (let n = 0; n < 3; n ++) i ++\ni", "3"},
		{"let i = 0; while (i < 3) i ++\ni", "3"},
		{"let i = 0; lbl: i ++\ni", "1"},
		{"let i = 0; const f = () => i ++\nf(); f(); i", "2"},
		{"let i = 0; const f = async () => await i ++\nawait f(); i", "1"},
		{"let i = 0; i ++, i ++\ni", "2"},
		{"let i = 0; i = i ++ + 10; i", "10"},
		{"let i = 0; let t = i ? 1 : i ++\n[i, t]", "[1,0]"},
		// Across a newline a ++ starts the next statement (ASI).
		{"let m = 1\nm\n++m", "2"},
		{"let m = 1, n = 1\nm\n++\nn\n;[m, n]", "[1,2]"},
		// Regular expressions with flags before another statement.
		{"let r = /a/g\nlet q = 2\nr.flags + q", `"g2"`},
		{"let r = /[/]x/gi; r.test('/X')", "true"},
		{"let r = /a\\/b/m\nr.test('a/b')", "true"},
		{"const f = () => /a/g\nf().flags", `"g"`},
		{"const rs = 'x'.match(/x/g) ?? /y/gi\nrs.length", "1"},
		{"/a/gi", "{}"},
		// new with an empty argument list, and statements that start with ().
		{"function f() { return 1 }\n() => 2", `"[Function: ]"`},
		{"class A {}\n() => 3", `"[Function: ]"`},
		{"let m = new Map()\n;(() => m.size)()", "0"},
		{"let m = new Map(); [m.size]", "[0]"},
		{"{}\n() => 4", `"[Function: ]"`},
		// Other forms whose ends come from their last part.
		{"let s = `a${1 + 1}b`\ns", `"a2b"`},
		{"const tag = (x, ...v) => x.raw[0] + v[0]; let s = tag`q${7}`\ns", `"q7"`},
		{"let o = {a: {b: 2}}; let v = o?.a?.b\nv", "2"},
		{"let o = null; let v = o?.[1]\nv ?? 'none'", `"none"`},
		{"let f = null; let v = f?.()\nv === undefined", "true"},
		{"let v = (1, 2)\nv", "2"},
		{"let v = 0; v = 1, v = 2\nv", "2"},
		{"let f = async x => await x\nawait f(6)", "6"},
		{"let v = await (Promise.resolve(7))\nv", "7"},
		{"let v = await Promise.resolve(8)\nv", "8"},
		{"class C { x = 1; static y = /z/g }\n[new C().x, C.y.flags]", `[1,"g"]`},
		{"let C = class { f = () => 3 }\nnew C().f()", "3"},
		{"outer: for (const x of [1, 2]) { for (;;) { continue outer } }\n'done'", `"done"`},
		{"let n = 0; do n ++; while (n < 3)\nn", "3"},
		{"let v = typeof undefined_name\nv", `"undefined"`},
		// A statement the parser would continue with the result's `return`.
		{"var let = 5\nlet\n0", "0"},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			c := runCell(t, cm, fmt.Sprint("s", i), tt.code)
			if c.Status != codemode.StatusOK || string(c.Result) != tt.want {
				t.Errorf("cell %q: %s, want result %s", tt.code, c.JSON(), tt.want)
			}
		})
	}
}

// TestRun_ClassPrivateMembersRun: the check that refuses identifiers not
// spelled as their name (non-ASCII, \u escapes) found #name's position on
// its # and refused every class with private members.
func TestRun_ClassPrivateMembersRun(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	for _, tt := range []struct{ code, want string }{
		{"class Counter { #n = 0; inc() { return ++this.#n } }\nconst c = new Counter(); c.inc(); c.inc()", "2"},
		{"class P { static #k = 3; static has(o) { return #k in o } static get k() { return P.#k } }\n[P.has(P), P.k]", "[true,3]"},
		{"class M { #m() { return 4 } call() { return this.#m() } }\nnew M().call()", "4"},
	} {
		c := runCell(t, cm, "s", tt.code)
		if c.Status != codemode.StatusOK || string(c.Result) != tt.want {
			t.Errorf("cell %q: %s, want result %s", tt.code, c.JSON(), tt.want)
		}
	}
}

// cellPositions returns the "cell[N]:line:column" positions in s.
func cellPositions(s string) []string {
	return regexp.MustCompile(`cell\[\d+\]:\d+:\d+`).FindAllString(s, -1)
}

// TestRun_ErrorPositionsAreTheCellsOwn: the rewrite shifts columns on the
// lines it edits (`let` becomes `;(`, a function's name gets a prefix, the
// last expression gets `return (`), and compile errors and stacks gave
// positions in the rewritten source. They must be where plain JavaScript
// puts them in the model's code: each cell is also run as a plain goja
// script named like the cell, and its positions must be the same.
func TestRun_ErrorPositionsAreTheCellsOwn(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	for i, tt := range []struct {
		name  string
		cells []string // earlier cells, then the failing one
		want  string   // a position the error must name
	}{
		{"runtime error on line 5, earlier lines and its own rewritten", []string{
			"const a = 1\nlet b\nfunction f(x) { return x.y.z }\nclass K { m() { return f({}) } }\nlet v = 2; new K().m()"}, "cell[1]:5:"},
		{"reference error after a declaration on its line", []string{
			"let c1 = 1\nlet c2 = 2\nlet c3 = 3\n\nlet xx = 1; const yy = 2; nope()"}, "cell[1]:5:"},
		{"thrown in a function declared on one line", []string{
			"const q = 1; function boom() { throw new Error('boom') } let r = 2\n\n\n\nboom()"}, "cell[1]:1:"},
		{"compile error on line 5", []string{
			"let a = 1\nlet b = 2\nconst c = 3\nfunction g() {}\nlet d = 4; { let z; let z }"}, "cell[1]:5:"},
		{"a function of an earlier cell failing in a later one", []string{
			"let u = 1; function later(o) { return o.p.q }",
			"let w = 1; const h = () => later({})\n\n\n\nlet s = 2; h()"}, "cell[1]:1:"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			session := fmt.Sprint("pos", i)
			var plain []string
			rt := goja.New()
			for n, code := range tt.cells {
				c := runCell(t, cm, session, code)
				_, err := rt.RunScript(fmt.Sprintf("cell[%d]", n+1), code)
				if n < len(tt.cells)-1 {
					wantOK(t, c)
					continue
				}
				if c.Error == nil || err == nil {
					t.Fatalf("cell %q: %s; plain: %v", code, c.JSON(), err)
				}
				plain = cellPositions(err.Error())
				if ex, ok := err.(*goja.Exception); ok {
					plain = cellPositions(ex.Value().ToObject(rt).Get("stack").String())
				}
				got := cellPositions(c.Error.Message + "\n" + c.Error.Stack)
				if len(plain) == 0 || len(got) < len(plain) || !slices.Equal(got[:len(plain)], plain) || !slices.ContainsFunc(got, func(p string) bool { return strings.HasPrefix(p, tt.want) }) {
					t.Errorf("cell %q: error %+v: positions %v, want %v (as plain JavaScript) with %s", code, c.Error, got, plain, tt.want)
				}
			}
		})
	}
}

// TestRun_RegexpsFollowedByCommentsKeepTheirFlags: goja read the first
// identifier after a comment that follows a regular expression's closing
// slash as its flags, across lines: `/a/// c` then a line `r` was refused
// ("Invalid flags"), then a line `g` or `s` silently became /a/g or /a/s.
func TestRun_RegexpsFollowedByCommentsKeepTheirFlags(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	for i, tt := range []struct{ code, want string }{
		{"/a/g// c", "{}"},
		{"let r = /a/g// c\nr.flags", `"g"`},
		{"let r = /a/gi/* c */\nr.flags", `"gi"`},
		{"let r = /a/// c\nr.source", `"a"`},
		{"let g = 1; let r = /a/// c\ng\n;r.flags", `""`},
		{"let i = 2; let r = /a//* c */\ni\n;[r.flags, i]", `["",2]`},
		{"let r = /a/// c\nlet s = /b/// d\ns\n;[r.source, s.source, s.flags]", `["a","b",""]`},
		{"let r = [/a/// c\n, /b//* d */\n]\nr.map(x => x.flags).join()", `","`},
		{"const f = () => /[/]/// c\nf().test('/')", "true"},
		{"const f = () => /a/// c\nString(f) === '() => /a/'", "true"},
		{"function f() { return /a/// c\n}\nf().source", `"a"`},
		{"let s = `${/a/// c\n}`\ns", `"/a/"`},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			c := runCell(t, cm, fmt.Sprint("s", i), tt.code)
			if c.Status != codemode.StatusOK || string(c.Result) != tt.want {
				t.Errorf("cell %q: %s, want result %s", tt.code, c.JSON(), tt.want)
			}
		})
	}
	// The space the sandbox puts after such a slash moves no column.
	c := runCell(t, cm, "err", "let x = /a//*c*/ g")
	if c.Error == nil || !strings.Contains(c.Error.Message, "(line 1, column 18)") {
		t.Errorf("error %+v, want one at line 1, column 18", c.Error)
	}
}

// TestRun_LineCommentsEndAtEveryLineTerminator: a // comment ends at \r,
// U+2028 and U+2029 as at \n; the rewrite read the next line as part of
// the comment and put the cell's result in the wrong place.
func TestRun_LineCommentsEndAtEveryLineTerminator(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	for _, tt := range []struct{ code, want string }{
		{"1 // c\r2", "2"},
		{"1 // c\r\n2", "2"},
		{"let a = 1 // c\u2028a + 1", "2"},
		{"let a = 1 // c\u2029a + 2", "3"},
	} {
		c := runCell(t, cm, "s", tt.code)
		if c.Status != codemode.StatusOK || string(c.Result) != tt.want {
			t.Errorf("cell %q: %s, want result %s", tt.code, c.JSON(), tt.want)
		}
	}
}

// asciiTwin replaces each character of s by as many x as it has UTF-16
// code units: the same columns in JavaScript's count, in bytes for goja.
func asciiTwin(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 {
			b.WriteRune(r)
		} else {
			b.WriteString(strings.Repeat("x", len(utf16.Encode([]rune{r}))))
		}
	}
	return b.String()
}

// TestRun_ErrorColumnsCountUTF16CodeUnits: goja counts columns in bytes;
// JavaScript (and the model reading its own code) counts UTF-16 code
// units, so text like "é€😀" before an error moved its column by 5. Each
// cell's positions must be those plain goja gives for its ASCII twin.
func TestRun_ErrorColumnsCountUTF16CodeUnits(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	for i, code := range []string{
		`const s = "é€😀"; s.x.y`,
		`let t = "ü"; let u = 1; nope()`,
		"let v = 'ä'\nfunction f() { return '日本' + x.y }\nlet w = 'ö'; f()",
		"const q = `é${'😀'}`; class K { m() { return q.a.b } }\nnew K().m()",
		`let a = "é"; { let z; let z }`,
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			c := runCell(t, cm, fmt.Sprint("u", i), code)
			_, err := goja.New().RunScript("cell[1]", asciiTwin(code))
			if c.Error == nil || err == nil {
				t.Fatalf("cell %q: %s; plain: %v", code, c.JSON(), err)
			}
			want := cellPositions(err.Error())
			if ex, ok := err.(*goja.Exception); ok {
				want = cellPositions(ex.Value().ToObject(nil).Get("stack").String())
			}
			got := cellPositions(c.Error.Message + "\n" + c.Error.Stack)
			if len(want) == 0 || len(got) < len(want) || !slices.Equal(got[:len(want)], want) {
				t.Errorf("cell %q: error %+v: positions %v, want %v", code, c.Error, got, want)
			}
		})
	}
	// Errors found before the cell runs give a line and a column too.
	for _, tt := range []struct{ code, want string }{
		{`"ü" + )`, "(line 1, column 7)"},
		{"const s = \"é😀\"; 10n", "(line 1, column 18)"},
		{"let a = '€'\nlet b = '€€', c = /(?=€)/", "(line 2, column 19)"},
		{"'é'; let x = /a//*€*/ g", "(line 1, column 23)"},
	} {
		c := runCell(t, cm, "syntax", tt.code)
		if c.Error == nil || !strings.HasSuffix(c.Error.Message, tt.want) {
			t.Errorf("cell %q: error %+v, want one at %s", tt.code, c.Error, tt.want)
		}
	}
}

// TestRun_StacksKeepTheModelsOwnText: the rewrite renames a top-level
// function f to __cm_fn_f and takes the prefix out of what the model
// reads; it took it out of every text, the model's messages, strings and
// names included.
func TestRun_StacksKeepTheModelsOwnText(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	c := runCell(t, cm, "s", "function f() { throw new Error('see __cm_fn_ here') }\nf()")
	if c.Error == nil || c.Error.Message != "see __cm_fn_ here" || !strings.Contains(c.Error.Stack, "Error: see __cm_fn_ here\n") || !strings.Contains(c.Error.Stack, "\tat f (cell[1]:1:") {
		t.Errorf("error %+v", c.Error)
	}
	c = runCell(t, cm, "s", "function my__cm_fn_x() { throw new Error('x') }\nmy__cm_fn_x()")
	if c.Error == nil || !strings.Contains(c.Error.Stack, "\tat my__cm_fn_x (cell[2]:1:") {
		t.Errorf("error %+v", c.Error)
	}
	for _, tt := range []struct{ code, want string }{
		{"const g = function () { return '__cm_fn_x' }; String(g)", "function () { return '__cm_fn_x' }"},
		{"function h() { return '__cm_fn_y' }\nString(h)", "function h() { return '__cm_fn_y' }"},
		{"async function af() {}; String(af)", "async function af() {}"},
		{"function* gen() {}; String(gen)", "function* gen() {}"},
		{"function /* c */ k() {}; String(k)", "function /* c */ k() {}"},
	} {
		c := runCell(t, cm, "s", tt.code)
		if got, _ := resultOf(t, c).(string); got != tt.want {
			t.Errorf("cell %q: %s, want %q", tt.code, c.JSON(), tt.want)
		}
	}
}

// TestRun_TheRewritesNamesAreNotTheCells: the rewrite runs a cell inside a
// function of __cm_global__ (the global object) and __cm_define__ (which
// makes a hoisted function global). A cell that declared one broke the
// rewrite (`let __cm_global__ = 1` and a class was lost), and the top-level
// `arguments` reached __cm_define__. Names starting with __cm_ are refused
// and `arguments` is the cell's own.
func TestRun_TheRewritesNamesAreNotTheCells(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	for _, code := range []string{
		"let __cm_global__ = 1; class C {}; typeof C",
		"var __cm_define__ = 5",
		"__cm_define__('x', () => 1)",
		"__cm_global__.y = 1",
		"function __cm_fn_f() {}",
		"const {__cm_global__} = globalThis",
		"function g(__cm_define__) { return __cm_define__ }",
		"globalThis.__cm_define__",
		"let __cm_x = 1",
	} {
		c := runCell(t, cm, "s", code)
		if c.Status != codemode.StatusError || c.Error.Name != "SyntaxError" || !strings.Contains(c.Error.Message, "reserved") {
			t.Errorf("cell %q: %s, want a SyntaxError saying the name is reserved", code, c.JSON())
		}
	}
	c := runCell(t, cm, "s", "[typeof arguments, arguments.length, globalThis['__cm_global__'] === undefined, globalThis['__cm_define__'] === undefined,"+
		" Object.getOwnPropertyNames(globalThis).filter(n => n.startsWith('__cm_'))]")
	// __cm_keys__ is the sandbox's check of object spreads (read-only).
	if got := jsonText(resultOf(t, c)); got != `["object",0,true,true,["__cm_keys__"]]` {
		t.Errorf("what the cell reaches: %s", got)
	}
	c = runCell(t, cm, "s", "class D {}; function e() { return 1 }; const s = '__cm_global__'; [typeof D, e(), s]")
	if got := jsonText(resultOf(t, c)); got != `["function",1,"__cm_global__"]` {
		t.Errorf("after the refused cells: %s", got)
	}
}

// TestRun_ArgumentsInAnArrowIsRefused: goja panics when an arrow function
// that reads its enclosing function's `arguments` is called; the cell
// aborted as an internal error and the kernel was reset, losing the
// session's variables. `arguments` anywhere inside an arrow (the shorthand
// {arguments} too, which happened not to crash) is now a SyntaxError, the
// variables stay, and `arguments` outside arrows (and a property named
// arguments) still work.
func TestRun_ArgumentsInAnArrowIsRefused(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	if c := runCell(t, cm, "s", "var kept = 41"); c.Status == codemode.StatusError {
		t.Fatalf("setup: %s", c.JSON())
	}
	for _, code := range []string{
		"(() => arguments.length)()",
		"function f() { return (() => arguments.length)() }; f(1, 2)",
		"function f() { const g = () => arguments[0]; return g() }; f(7)",
		"async function f() { return (() => arguments.length)() }; await f(1)",
		"function f() { return (() => () => ({arguments}))()() }; f(1)",
	} {
		c := runCell(t, cm, "s", code)
		if c.Status != codemode.StatusError || c.Error.Name != "SyntaxError" || !strings.Contains(c.Error.Message, "arguments") {
			t.Errorf("cell %q: %s, want a SyntaxError about arguments", code, c.JSON())
		}
	}
	c := runCell(t, cm, "s", "function f() { const a = arguments; return (() => a.length)() }; "+
		"function g() { return arguments.length }; const o = {arguments: 3}; const h = () => o.arguments; "+
		"[kept + 1, f(1, 2), g(1, 2, 3), h(), (function () { return arguments.length })(1)]")
	if got := jsonText(resultOf(t, c)); got != `[42,2,3,3,1]` {
		t.Errorf("after the refused cells: %s (%s)", got, c.JSON())
	}
}
