package codemode_test

import (
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/codemode"
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
