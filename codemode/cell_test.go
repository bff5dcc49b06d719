package codemode_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/codemode"
)

func TestRun_CellsShareTopLevelDeclarations(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	steps := []struct {
		code, want string
	}{
		{"const a = 40\nlet b\nvar c = 1\nfunction add(x, y) { return x + y }\nclass Box { constructor(v) { this.v = v } }", "null"},
		{"add(a, 2)", "42"},
		{"const a = 1 // declared again in a later cell\na", "1"},
		{"const {x, y: [z]} = {x: 3, y: [4]}; [x, z, typeof b, c]", `[3,4,"undefined",1]`},
		{"new Box(7).v", "7"},
		{"function helper() { return 'new' }\nfunction main() { return helper() }\nmain()", `"new"`},
		{"function helper() { return 'newer' }", "null"},
		{"main()", `"newer"`},
		{"add.name + ':' + add.toString()", `"add:function add(x, y) { return x + y }"`},
		{"{ let inner = 5 }\ntypeof inner", `"undefined"`},
		{"for (let i = 0; i < 3; i++) {}\ntypeof i", `"undefined"`},
		{"await Promise.resolve(5) * 2", "10"},
		{"return 'early'\n'never'", `"early"`},
		{"({a: a, b: [b]})", `{"a":1,"b":[null]}`},
		{"(1 + 2) * 3; /* comment */\n// line comment", "9"},
		{"`t${a}`", `"t1"`},
		{"console.log('a', 1, {k: [1]}); print('b')", "null"},
		// new without arguments: the parser's end of `new Map()` is before
		// its parentheses, where the rewrite must not cut the statement.
		{"const m = new Map(); m.set('k', 2); m.get('k')", "2"},
		{"const s = new Set()\ns.add(3); [...s]", "[3]"},
		{"let d = a > 0 ? new Map() : null, e = new (Map)( /* empty */ ); [d.size, e.size]", "[0,0]"},
		{"new Set()\n'after'", `"after"`},
		{"a; new Map();", `"[object Map]"`},
	}
	for _, s := range steps {
		c := runCell(t, cm, "s1", s.code)
		if got := jsonText(resultOf(t, c)); got != s.want {
			t.Fatalf("cell %q: result %s, want %s", s.code, got, s.want)
		}
	}
	c := runCell(t, cm, "s1", "console.log('a', 1, {k: [1]}); print('b')")
	if c.Stdout != "a 1 {\"k\":[1]}\nb\n" {
		t.Errorf("stdout = %q", c.Stdout)
	}
	if c.ExecutionCount != len(steps)+1 {
		t.Errorf("execution_count = %d, want %d", c.ExecutionCount, len(steps)+1)
	}
	if other := runCell(t, cm, "s2", "typeof a"); jsonText(resultOf(t, other)) != `"undefined"` {
		t.Errorf("another session sees a: %s", other.Result)
	}
}

func TestRun_ErrorsCarryMessageAndCellLines(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	tests := []struct {
		name, code string
		status     codemode.Status
		errName    string
		msg, stack string
	}{
		{"thrown error", "const x = 1\n\nfunction f() {\n  throw new Error('boom')\n}\nf()", codemode.StatusError, "Error", "boom", "cell[1]:4:"},
		{"reference error", "\nnope + 1", codemode.StatusError, "ReferenceError", "nope is not defined", "cell[2]:2:"},
		{"syntax error", "let x = ;", codemode.StatusError, "SyntaxError", "(line 1, column", ""},
		{"syntax error on a later line", "1\n2\n)", codemode.StatusError, "SyntaxError", "(line 3,", ""},
		{"rejected await", "await Promise.reject(new TypeError('bad'))", codemode.StatusError, "TypeError", "bad", ""},
		{"thrown string", "throw 'plain'", codemode.StatusError, "", "plain", ""},
		{"unhandled rejection", "Promise.reject(new Error('lost')); 1", codemode.StatusError, "Error", "unhandled promise rejection: lost", ""},
		{"bigint literal", "10n ** 1000000n", codemode.StatusError, "SyntaxError", "BigInt", ""},
		{"backtracking regexp literal", "/(a+)+(?=b)/.test('aaa')", codemode.StatusError, "SyntaxError", "backtracking", ""},
		// Identifiers whose source spelling is not their name (found by
		// FuzzRun: "const A0ϗ" cut the rewritten source out of range).
		{"non-ASCII constant", "const A0ϗ", codemode.StatusError, "SyntaxError", `identifier "A0ϗ"`, ""},
		{"non-ASCII initializer before another statement", "let b = 1\nlet a = ϗϗϗ\nb = 2; b", codemode.StatusError, "SyntaxError", `identifier "ϗϗϗ"`, ""},
		{"non-ASCII property as the result", "({}).ϗ", codemode.StatusError, "SyntaxError", `identifier "ϗ"`, ""},
		{"non-ASCII shorthand in a pattern", "let {ϗ} = {}", codemode.StatusError, "SyntaxError", `identifier "ϗ"`, ""},
		{"escaped identifier", "let \\u0061 = 1\na", codemode.StatusError, "SyntaxError", `identifier "a"`, ""},
	}
	for _, tt := range tests {
		c := runCell(t, cm, "s", tt.code)
		if c.Status != tt.status || c.Error == nil {
			t.Fatalf("%s: status %s, error %+v", tt.name, c.Status, c.Error)
		}
		if c.Error.Name != tt.errName || !strings.Contains(c.Error.Message, tt.msg) || !strings.Contains(c.Error.Stack, tt.stack) {
			t.Errorf("%s: error = %+v, want name %q, message containing %q, stack containing %q", tt.name, c.Error, tt.errName, tt.msg, tt.stack)
		}
	}
	if c := runCell(t, cm, "s", "'still works'"); jsonText(resultOf(t, c)) != `"still works"` {
		t.Fatalf("after errors: %+v", c)
	}
	// Non-ASCII text in strings, comments and keys is fine: only names are refused.
	if c := runCell(t, cm, "s", "const greeting = {'ϗ': 'héllo ϗ'} // ϗ\ngreeting['ϗ']"); jsonText(resultOf(t, c)) != `"héllo ϗ"` {
		t.Fatalf("non-ASCII strings: %+v", c)
	}
}

// TestRun_StatementsEndingInParenthesesRun: the parser's end of a
// declaration or statement is before the parentheses closing its last
// expression, and the cell rewrite placed its edits there, so ordinary code
// such as `const toObj = x => ({x})` followed by another statement, or
// `let o = (1)`, failed as a SyntaxError.
func TestRun_StatementsEndingInParenthesesRun(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	for _, tt := range []struct{ code, want string }{
		{"const toObj = x => ({x}); toObj(1).x", "1"},
		{"const toObj2 = x => ({x})\ntoObj2(2).x", "2"},
		{"let o = (1); o", "1"},
		{"let o1 = (1), o2 = ((2) /* two */ ); o1 + o2", "3"},
		{"var v = (9)\nv", "9"},
		{"let [d1, d2] = ([1, 2]); d1 + d2", "3"},
		{"let p = {}; p.e = (() => 1); p.e()", "1"},
		{"let q = 1; q = (2); q", "2"},
		{"let z = 1; if (z) z = (3); z", "3"},
		{"x5 = (1) /* c */ ; (x5 + 1)", "2"},
		{"const sq = (n) => (n * n)\nsq(4)", "16"},
	} {
		c := runCell(t, cm, "s", tt.code)
		if c.Status != codemode.StatusOK || string(c.Result) != tt.want {
			t.Errorf("cell %q: %s, want result %s", tt.code, c.JSON(), tt.want)
		}
	}
}

// TestRun_AResultOverTheOutputCapIsCutAndStaysJSON: a result longer than
// the output cap reaches the model as a JSON string of its start marked
// "…", truncated set. It was the start of its JSON with "…" after it, not
// JSON, and the whole cell then encoded to nothing: the model got an empty
// answer.
func TestRun_AResultOverTheOutputCapIsCutAndStaysJSON(t *testing.T) {
	t.Parallel()
	const capChars = 1000
	cm := newCM(t, codemode.Config{MaxOutputChars: capChars})
	for _, tt := range []struct{ code, prefix string }{
		{`"x".repeat(5000)`, "xxxx"},
		{`"é😀".repeat(5000)`, "é😀é😀"},
		{`'"\\'.repeat(5000)`, `"\`},
		{`Array.from({length: 5000}, (_, i) => i)`, "[0,1,2"},
		{`[{s: "y".repeat(5000)}]`, `[{"s":"yyy`},
		{`new Error("z".repeat(5000))`, "Error: zzz"},
	} {
		c := runCell(t, cm, "s", tt.code)
		var v any
		if err := json.Unmarshal([]byte(c.JSON()), &v); err != nil || c.Status != codemode.StatusOK {
			t.Errorf("%s: the cell is %q (%v)", tt.code, c.JSON(), err)
			continue
		}
		s, ok := resultOf(t, c).(string)
		if !ok || !strings.HasPrefix(s, tt.prefix) || !strings.HasSuffix(s, "…") || !c.Truncated || len(c.Result) > capChars {
			t.Errorf("%s: result of %d bytes, truncated %v: %.60s…", tt.code, len(c.Result), c.Truncated, c.Result)
		}
	}
}

// TestRun_AnErrorIsCutAtTheOutputCap: an error's name, message and stack
// were given whole, so a thrown 4 MiB message became an 8 MiB answer to the
// model (message and stack), past the cap stdout and results keep to.
func TestRun_AnErrorIsCutAtTheOutputCap(t *testing.T) {
	t.Parallel()
	const capChars = 1000
	cm := newCM(t, codemode.Config{MaxOutputChars: capChars})
	for _, code := range []string{
		`throw new Error("x".repeat(2 ** 22))`,
		`throw "y".repeat(2 ** 22)`,
		`const e = new Error("m"); e.stack = "at cell[1]:1:1 " + "z".repeat(2 ** 22); throw e`,
		`const e = new Error("m"); e.name = "n".repeat(2 ** 22); throw e`,
		`Promise.reject(new Error("w".repeat(2 ** 22))); 1`,
	} {
		c := runCell(t, cm, "s", code)
		if c.Error == nil || c.Status != codemode.StatusError {
			t.Errorf("%s: %.200s", code, c.JSON())
			continue
		}
		if n := len(c.JSON()); n > 4*capChars || !strings.Contains(c.Error.Message+c.Error.Name+c.Error.Stack, "…") {
			t.Errorf("%s: the cell is %d bytes: %.300s", code, n, c.JSON())
		}
	}
}
