package codemode

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/dop251/goja/ast"
)

// FuzzRewriteKeepsMeaning: goja's parser reads the rewritten cell as it
// reads the cell: the same literals (a regular expression stays one, not
// a division, template text stays text, a comment stays a comment), the
// same operators and names in the same order, and the same source text for
// each function (what a snapshot saves). The rewrite's own additions (its
// names, the assignments and statements that replace declarations) are
// left out of the comparison.
func FuzzRewriteKeepsMeaning(f *testing.F) {
	for _, seed := range rewriteMeaningSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, code string) {
		checkRewriteKeepsMeaning(t, code)
	})
}

var rewriteMeaningSeeds = []string{
	"1", "let x = 1\nx", "const {a, b: [c]} = {a: 1, b: [2]}; a + c", "function f() { return 1 }", "class C {}",
	"let i = 0; i ++; i", "let o = {y: 1}; o.y --\no.y", "(i) ++", "i /* c */ ++",
	"let r = /a/g\nlet q = 2\nq", "const f = () => /a/g\nf()", "let s = `a${1}b`\ns", "let v = o?.a?.[b]\nv",
	"let f = async x => await x ++\nf", "class C { x = 1; #p = 2; static y = /z/g }\nC", "if (a) b ++; else c --\nd",
	"x = (1) /* c */ ;", "var a, b = 2, c", "let [x = 1, ...rest] = []", "return 5", "x => ({v: x})",
	"x => `(${(x)}` + \")\"", "/a/g// c", "let r = /a/// c\nr", "let r = /a//* c */\ng", "f(/a/// c\n, /b/)",
	"let a = 1 // c\u2028a", "let a = b\n/c/g", "let a = b\n/c/g.exec(d)", "a = b / c / d", "let t = `${`${'`'}`}`",
	"let c = 1 /* */ / 2 /* a*/ / 3", "let d = x => x / 2 / 1\nd", "let e = '\u2028'\ne", "x = {} / 1", "({}) / 1",
	"let g = `a${ {a: `}`}.a }b`", "let h = a++ / 2", "let k = [] / /a/g.lastIndex", "class K {}\n/a/g",
	"function f() {}\n/a/g", "let l = 1\n`x`", "const m = async () => {}\n(1)", "let n = a\n++b",
	"let y = (x) => (1) + (2)\ny", "let z = x => x ? (1) : (2)", "const w = (a, b) => (a)(b)",
	"let x\n/a/g", "let x = y\n/a/g", "class C {}\n[1]", "class C {}\n(1)", "let u = `${`${a}`}`\n/b/",
	"/* ** / */ /a/g", "//*/\n1", "/*/ */ 2", "let p = '\u2029' // c\u2029/a/", "let q = new.target\nq",
	"let s = x => x\n/a/g", "const f = x => /a/// c\n(1)", "await\n/a/g", "let r = a ? /b/ : /c/\nr",
	"if (a) /b/g.test(c)\n/d/", "let t = {a: 1}\n/b/g", "x = y => `${y}`\n`z`", "let v = (1)\n/2/g",
}

func checkRewriteKeepsMeaning(t *testing.T, code string) {
	t.Helper()
	// The cell as parseCell reads it: with a space after the regular
	// expressions goja would read the next line's name as flags of.
	orig, src, _, err := parseCell("cell", wrapperHead+"\n"+code+wrapperTail)
	if err != nil || wrapperFunction(orig) == nil || !compiles(orig) {
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
	fixArrowSources(orig, src)
	fixArrowSources(prog, rw.src)
	want, got := meaning(wrapperFunction(orig)), meaning(wrapperFunction(prog))
	if len(got) != len(want) {
		t.Fatalf("the rewrite of %q reads differently:\ncell:    %q\nrewrite: %q\n%s", code, want, got, rw.src)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("the rewrite of %q reads differently at %d: %q, not %q\ncell:    %q\nrewrite: %q\n%s", code, i, got[i], want[i], want, got, rw.src)
		}
	}
}

// meaning lists, in order, what the parser read in fn's body, without what
// the rewrite adds or changes.
func meaning(fn *ast.FunctionLiteral) []string {
	var out []string
	if fn == nil || fn.Body == nil {
		return nil
	}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Interface, reflect.Pointer:
			if v.IsNil() {
				return
			}
			if v.Kind() == reflect.Interface {
				walk(v.Elem())
				return
			}
			switch n := v.Interface().(type) {
			case *ast.ExpressionStatement:
				// The prelude that makes hoisted functions global.
				if c, ok := n.Expression.(*ast.CallExpression); ok {
					if id, ok := c.Callee.(*ast.Identifier); ok && id.Name == defineParam {
						return
					}
				}
			case *ast.Identifier:
				if s := string(n.Name); s != globalParam && s != "undefined" {
					out = append(out, "id:"+strings.TrimPrefix(s, fnPrefix))
				}
				return
			case *ast.StringLiteral:
				out = append(out, "str:"+n.Literal)
				return
			case *ast.RegExpLiteral:
				out = append(out, "re:"+n.Pattern+"/"+n.Flags)
				return
			case *ast.NumberLiteral:
				out = append(out, "num:"+n.Literal)
				return
			case *ast.TemplateElement:
				out = append(out, "tpl:"+n.Literal)
				return
			case *ast.BinaryExpression:
				out = append(out, "bin:"+n.Operator.String())
			case *ast.UnaryExpression:
				out = append(out, fmt.Sprintf("un:%s:%v", n.Operator, n.Postfix))
			case *ast.AssignExpression:
				if n.Operator.String() != "=" {
					out = append(out, "assign:"+n.Operator.String())
				}
			case *ast.CallExpression:
				out = append(out, "call")
			case *ast.NewExpression:
				out = append(out, "new")
			case *ast.ConditionalExpression:
				out = append(out, "cond")
			case *ast.FunctionLiteral:
				out = append(out, "fn:"+declaredSource(n.Source))
			case *ast.ArrowFunctionLiteral:
				out = append(out, "arrow:"+n.Source)
			case *ast.ClassLiteral:
				out = append(out, "class:"+n.Source)
			case *ast.AwaitExpression:
				out = append(out, "await")
			}
			walk(v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					walk(v.Field(i))
				}
			}
		case reflect.Slice:
			if k := v.Type().Elem().Kind(); k == reflect.Uint8 || k == reflect.Uint16 {
				return
			}
			for i := range v.Len() {
				walk(v.Index(i))
			}
		}
	}
	walk(reflect.ValueOf(fn.Body))
	return out
}
