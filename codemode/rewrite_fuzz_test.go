package codemode

import (
	"strings"
	"testing"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
)

// FuzzRewrite: code that compiles as the body of the cell's async function
// compiles after the rewrite too (or is refused by the sandbox's checks),
// and every position of the rewritten source maps into the cell.
func FuzzRewrite(f *testing.F) {
	for _, seed := range []string{
		"1", "let x = 1\nx", "const {a, b: [c]} = {a: 1, b: [2]}; a + c", "function f() { return 1 }", "class C {}",
		"let i = 0; i ++; i", "let o = {y: 1}; o.y --\no.y", "let a = [1]; a[0] ++", "(i) ++", "i /* c */ ++",
		"let r = /a/g\nlet q = 2\nq", "const f = () => /a/g\nf()", "function f() {}\n() => 1", "let m = new Map()\nm",
		"let s = `a${1}b`\ns", "let v = o?.a?.[b]\nv", "let v = (1, 2)\nv", "let f = async x => await x ++\nf",
		"class C { x = 1; #p = 2; static y = /z/g }\nC", "lbl: for (;;) break lbl", "if (a) b ++; else c --\nd",
		"let x = 1; x;", "x = (1) /* c */ ;", "var a, b = 2, c", "let [x = 1, ...rest] = []", "return 5",
		"const f = x => x ++\nString(f)", "const g = (x => (x))", "let h = async (a) => (await a)\nh", "x => ({v: x})",
		"x => `(${(x)}` + \")\"", "x => y => (x + y)", "/a/g// c", "let r = /a/// c\nr", "let r = /a//* c */\ng",
		"f(/a/// c\n, /b/)", "'é€😀'; null.x", "let s = '日本'; { let z; let z }", "throw new Error('__cm_fn_x')",
		"function my__cm_fn_x() { throw 1 }\nmy__cm_fn_x()", "let __cm_global__ = 1; class C {}", "arguments[1]",
		"1 // c\r2", "let a = 1 // c\u2028a",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, code string) {
		src := wrapperHead + "\n" + code + wrapperTail
		orig, err := parse("cell", src)
		if err != nil || wrapperFunction(orig) == nil || !compiles(orig) || !regexpsCompile(orig) {
			return
		}
		rw, err := rewrite(code, "cell")
		if err != nil {
			return // refused by the sandbox's checks
		}
		prog, err := parse("cell", rw.src)
		if err != nil {
			t.Fatalf("the rewrite of %q does not parse: %v\n%s", code, err, rw.src)
		}
		fixArrowSources(prog, rw.src)
		if _, err := goja.CompileAST(prog, false); err != nil {
			t.Fatalf("the rewrite of %q does not compile: %v\n%s", code, err, rw.src)
		}
		// An arrow function's source text (what a snapshot saves) parses on
		// its own, unless it names what only its context gives.
		walkNodes(prog, func(n any) {
			a, ok := n.(*ast.ArrowFunctionLiteral)
			if !ok || strings.ContainsAny(a.Source, "#") || strings.Contains(a.Source, "super") || strings.Contains(a.Source, "new.target") || strings.Contains(a.Source, "yield") {
				return
			}
			if _, err := parse("snapshot", "("+a.Source+"\n)"); err != nil {
				t.Fatalf("in the rewrite of %q, the arrow function's source %q does not parse: %v", code, a.Source, err)
			}
		})
		lines := file.NewFile("", code, 1).Position(len(code)).Line // \r and U+2028 end lines too
		for _, r := range rw.pos.runs {
			if line, col := rw.pos.cellPos(r.rwLine, r.rwCol); line < 1 || line > lines || col < 1 {
				t.Fatalf("the rewrite of %q maps %d:%d to %d:%d", code, r.rwLine, r.rwCol, line, col)
			}
		}
	})
}

// compiles reports whether goja compiles prog (its compiler panics on some
// trees it parsed; that is not the rewrite's doing).
func compiles(prog *ast.Program) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	_, err := goja.CompileAST(prog, false)
	return err == nil
}

// regexpsCompile reports whether every regular expression literal in prog
// compiles: goja compiles none in an expression statement whose value is
// not used, so `/(/` compiled as a statement and not as the cell's result.
func regexpsCompile(prog *ast.Program) bool {
	ok := true
	walkNodes(prog, func(n any) {
		if re, is := n.(*ast.RegExpLiteral); is && ok {
			_, err := goja.Compile("", "(/"+re.Pattern+"/"+re.Flags+")", false)
			ok = err == nil
		}
	})
	return ok
}
