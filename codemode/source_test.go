package codemode_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/codemode"
)

// arrowForms are arrow functions as the model writes them, and what
// f(2) gives. goja's own source text of an arrow with an expression body
// ended at its body's Idx1: inside `x ++`, before the `)` of a
// parenthesised body, after the next token of a regular expression.
var arrowForms = []struct{ src, call string }{
	{"x => x ++", "2"},
	{"x => x --", "2"},
	{"x => x /* c */ ++", "2"},
	{"(x) => (x * 2)", "4"},
	{"x => ({v: x})", `{"v":2}`},
	{"x => ((x))", "2"},
	{"(a, b = 1) => { return a + b }", "3"},
	{"async x => x + 1", "{}"},
	{"async (x) => (await x)", "{}"},
	{"x => y => (x + y)", "null"},
	{"x => /a/g.test(x) ? 1 : (0)", "0"},
	{"() => /a/g", "{}"},
	{"x => \")\" + (x)", `")2"`},
	{"x => `(${(x)}` + (x)", `"(22"`},
	{"x => `${`${(x)}`}`", `"2"`},
	{"x => new Map([[x, 1]]).size", "1"},
	{"x => (a => (a))(x)", "2"},
	{"x => x.toString(10)", `"2"`},
}

// TestFunctionSource_ArrowFunctionsReadAsWritten: an arrow function's
// String() is the text the model wrote, parenthesised or not.
func TestFunctionSource_ArrowFunctionsReadAsWritten(t *testing.T) {
	t.Parallel()
	cm := newCM(t, codemode.Config{})
	for i, tt := range arrowForms {
		for _, code := range []string{
			fmt.Sprintf("const f%d = %s\nString(f%d)", i, tt.src, i),
			fmt.Sprintf("const g%d = (%s); String(g%d)", i, tt.src, i),
			fmt.Sprintf("[%s].map(String)[0]", tt.src),
		} {
			c := runCell(t, cm, "s", code)
			if got, _ := resultOf(t, c).(string); got != tt.src {
				t.Errorf("cell %q: %s, want result %q", code, c.JSON(), tt.src)
			}
		}
	}
}

// TestPersist_ArrowFunctionsSurviveARestore: a snapshot saves functions as
// their source; an arrow saved cut short failed to parse on restore and
// the variable was lost (or, with its closing parenthesis cut, meant
// something else).
func TestPersist_ArrowFunctionsSurviveARestore(t *testing.T) {
	t.Parallel()
	d, path := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d})
	code := ""
	for i, tt := range arrowForms {
		code += fmt.Sprintf("const f%d = %s\n", i, tt.src)
	}
	code += "const marked = () => '__cm_fn_x'\nfunction named() { return '__cm_fn_y' }"
	wantOK(t, runAs(t, cm, "s", "u", code))
	cm.Close()

	cm2 := newCM(t, codemode.Config{Persist: true, DB: reopen(t, path)})
	c := runAs(t, cm2, "s", "u", "1")
	wantOK(t, c)
	if !strings.Contains(c.Notice, "restored") || strings.Contains(c.Notice, "could not restore") {
		t.Errorf("restore notice %q", c.Notice)
	}
	for i, tt := range arrowForms {
		c := runAs(t, cm2, "s", "u", fmt.Sprintf("[String(f%d), f%d(2)]", i, i))
		var got []json.RawMessage
		var src string
		if c.Status != codemode.StatusOK || json.Unmarshal(c.Result, &got) != nil || len(got) != 2 ||
			json.Unmarshal(got[0], &src) != nil || src != tt.src || string(got[1]) != tt.call {
			t.Errorf("restored f%d = %s: %s, want [%q, %s]", i, tt.src, c.JSON(), tt.src, tt.call)
		}
	}
	c = runAs(t, cm2, "s", "u", "[marked(), named(), String(named)]")
	if want := `["__cm_fn_x","__cm_fn_y","function named() { return '__cm_fn_y' }"]`; jsonText(resultOf(t, c)) != want {
		t.Errorf("functions with the rewrite's prefix in their text: %s, want %s", c.JSON(), want)
	}
}

// TestPersist_DeclaredFunctionsWithCommentsSurviveARestore: the rewrite
// renames a top-level function f to __cm_fn_f and a snapshot saves its
// source without the prefix, across the comments that can stand between
// `function` (or `async`, or `*`) and the name. Each is restored twice
// (the second time as saved again by the restored session, whose state
// changed) and must read and run as written.
func TestPersist_DeclaredFunctionsWithCommentsSurviveARestore(t *testing.T) {
	t.Parallel()
	forms := []struct{ src, call string }{
		{"function /* c */ f() { return 1 }", "f()"},
		{"function/* c */f() { return 2 }", "f()"},
		{"function // c\n f() { return 3 }", "f()"},
		{"function /* a */ /* b */ f() { return 4 }", "f()"},
		{"function /**/f() { return 5 }", "f()"},
		{"function /* __cm_fn_ */ f() { return 6 }", "f()"},
		{"function /*\n*/ f() { return 7 }", "f()"},
		{"async /* c */ function f() { return 8 }", "await f()"},
		{"async function /* c */ f() { return 9 }", "await f()"},
		{"function /* c */ * f() { yield 10 }", "f().next().value"},
		{"function * /* c */ f() { yield 11 }", "f().next().value"},
		{"function /* c */ f(a = '__cm_fn_') { return a.length + 4 }", "f()"},
		{"function // c\u2028 f() { return 13 }", "f()"},
	}
	d, path := openSQLite(t)
	cm := newCM(t, codemode.Config{Persist: true, DB: d})
	for i, tt := range forms {
		wantOK(t, runAs(t, cm, fmt.Sprint("s", i), "u", tt.src))
	}
	cm.Close()
	for round := 1; round <= 2; round++ {
		cm := newCM(t, codemode.Config{Persist: true, DB: reopen(t, path)})
		for i, tt := range forms {
			c := runAs(t, cm, fmt.Sprint("s", i), "u", fmt.Sprintf("var round = %d; [String(f), %s]", round, tt.call))
			var got []any
			if c.Status == codemode.StatusOK {
				got, _ = resultOf(t, c).([]any)
			}
			if want := jsonText([]any{tt.src, i + 1}); jsonText(got) != want || strings.Contains(c.Notice, "could not restore") {
				t.Errorf("round %d: %q restored: %s, want %s", round, tt.src, c.JSON(), want)
			}
		}
		cm.Close()
	}
}
