package codemode_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentryhq/agentry/codemode"
)

// FuzzRun runs arbitrary code as cells: whatever the code, a cell ends with
// a valid status and a JSON rendering, and the next cell works.
func FuzzRun(f *testing.F) {
	for _, seed := range []string{
		"1", "let x = 1\nx", "const {a, b: [c]} = {a: 1, b: [2]}; a + c", "function f() { return 1 }", "class C {}",
		"await echo({text: 'x'})", "throw new Error('x')", "({a: 1})", "// only a comment", "/* c */ 1 /* d */;",
		"let", "const x", "}", "(", "`${", "/(?=a)/", "10n", "return 5", "var a, b = 2, c", "let [x = 1, ...rest] = []",
		"async function g() {}\nawait g()", "x => x", "label: for (;;) break label", "if (1) { let y = 2 }", "'\\u2028'",
		"const f = x => x ++\nString(f)", "const g = (x => (x)); String(g)", "async (a) => (await a)", "x => `(${(x)}`",
		"/a/g// c", "let r = /a/// c\nr", "let r = /a//* c */\ng", "'é€😀'; null.x", "throw new Error('__cm_fn_x')",
		"function my__cm_fn_x() { throw 1 }\nmy__cm_fn_x()", "let __cm_global__ = 1; class C {}", "arguments[1]", "1 // c\r2",
	} {
		f.Add(seed)
	}
	tools, _ := testTools(f)
	cm, err := codemode.New(codemode.Config{Tools: tools, CPUTimeLimit: 50 * time.Millisecond, CellTimeout: time.Second, MemoryLimit: 16 << 20})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { cm.Close() })
	f.Fuzz(func(t *testing.T, code string) {
		c, err := cm.Run(context.Background(), "fuzz", "", code)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		switch c.Status {
		case codemode.StatusOK, codemode.StatusError, codemode.StatusAborted:
		default:
			t.Fatalf("status %q", c.Status)
		}
		if (c.Status == codemode.StatusOK) == (c.Error != nil) {
			t.Fatalf("status %s with error %+v", c.Status, c.Error)
		}
		if !json.Valid([]byte(c.JSON())) || (len(c.Result) > 0 && !json.Valid(c.Result)) {
			t.Fatalf("invalid JSON: %s", c.JSON())
		}
		next, err := cm.Run(context.Background(), "fuzz", "", "2 + 2")
		if err != nil || string(next.Result) != "4" {
			t.Fatalf("after %q: %v %s", code, err, next.JSON())
		}
	})
}
