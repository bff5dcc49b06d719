package eval

import (
	"testing"

	"github.com/dop251/goja"
	"github.com/go-python/gpython/py"
	"go.starlark.net/starlark"
)

// TestToolCompositionConstructs runs, in each interpreter, the constructs a
// model uses to compose tool calls, and reports which ones it refuses.
func TestToolCompositionConstructs(t *testing.T) {
	cases := []struct {
		construct            string
		js, starlark, python string
	}{
		{"loop and dict/object", `let out = {}; for (const c of ["a", "b"]) out[c] = c.length; out`,
			"out = {}\nfor c in ['a', 'b']:\n  out[c] = len(c)\n", "out = {}\nfor c in ['a', 'b']:\n  out[c] = len(c)\n"},
		{"string interpolation", "const n = 2; if (`n=${n}` !== 'n=2') throw 1", "n = 2\ns = f'n={n}'\n", "n = 2\ns = f'n={n}'\nif s != 'n=2':\n  raise Exception('f-string not interpolated: ' + s)\n"},
		{"string formatting (older form)", `"n=" + 2`, "s = 'n=%d' % 2\n", "s = 'n=%d' % 2\n"},
		{"catch a failed call", `try { throw new Error("x") } catch (e) { e.message }`,
			"def f():\n  fail('x')\ntry:\n  f()\nexcept Exception as e:\n  pass\n", "try:\n  raise Exception('x')\nexcept Exception as e:\n  m = str(e)\n"},
		{"async function and await", `async function f() { return 1 } f()`, "", "async def f():\n  return 1\n"},
		{"parallel calls", `Promise.all([Promise.resolve(1), Promise.resolve(2)])`, "", ""},
		{"while loop", `let i = 0; while (i < 3) i++; i`, "i = 0\nwhile i < 3:\n  i += 1\n", "i = 0\nwhile i < 3:\n  i += 1\n"},
		{"classes", `class A { constructor() { this.x = 1 } }; new A().x`, "class A:\n  pass\n", "class A:\n  pass\n"},
		{"parse JSON (without host help)", `JSON.parse('{"a": 1}').a`, "x = json.decode('{\"a\": 1}')\n", "import json\nx = json.loads('{\"a\": 1}')\n"},
	}
	for _, c := range cases {
		r := goja.New()
		_, jsErr := r.RunString(c.js)
		var starErr, pyErr error
		if c.starlark != "" {
			_, starErr = starlark.ExecFileOptions(starOpts, &starlark.Thread{}, "cell", c.starlark, nil)
		} else {
			starErr = errNoSyntax
		}
		if c.python != "" {
			ctx := py.NewContext(py.DefaultContextOpts())
			_, pyErr = py.RunSrc(ctx, c.python, "cell", nil)
			ctx.Close()
		} else {
			pyErr = errNoSyntax
		}
		t.Logf("%-32s goja: %-4s starlark: %-4s gpython: %s", c.construct, verdict(jsErr), verdict(starErr), verdict(pyErr))
	}
}

type noSyntax struct{}

func (noSyntax) Error() string { return "no syntax for it" }

var errNoSyntax error = noSyntax{}

func verdict(err error) string {
	switch {
	case err == nil:
		return "yes"
	case err == errNoSyntax:
		return "none"
	}
	return "no (" + firstLine(err.Error()) + ")"
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	if len(s) > 60 {
		return s[:60]
	}
	return s
}
