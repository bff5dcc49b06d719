package codemode

import (
	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/token"
)

// keysCheck is the global through which compiled code checks the source of
// an object spread or rest before goja copies its keys. Cell code cannot
// name it (names starting with reservedPrefix are refused) and cannot
// replace it (it is read-only and not configurable).
const keysCheck = "__cm_keys__"

// checkObjectCopies makes the tree call keysCheck on the value an object
// spread (`{...x}`) or an object rest (`const {a, ...r} = x`,
// `({...r} = x)`) copies the keys of. Both are syntax, not builtins: goja
// copies every own key in one Go loop that no limit can stop, and a string
// has a key per character, so `{...s}` of a string within the string limit
// held 380 MiB and `const {...r} = s` 640 MiB (16 MiB limit) for 15 and
// 26 s. The call is placed on the tree, not in the text, so a function's
// source (what toString shows and a snapshot saves) is the code's own.
//
// A rest in a parameter, a for-in/of head, a catch clause or nested in
// another pattern has no expression of its own source to wrap and is not
// checked.
func checkObjectCopies(root ast.Node) {
	walkNodes(root, func(n any) {
		switch n := n.(type) {
		case *ast.ObjectLiteral:
			for _, p := range n.Value {
				if sp, ok := p.(*ast.SpreadElement); ok {
					sp.Expression = keysCall(sp.Expression)
				}
			}
		case *ast.Binding:
			if isRestPattern(n.Target) && n.Initializer != nil {
				n.Initializer = keysCall(n.Initializer)
			}
		case *ast.AssignExpression:
			if n.Operator == token.ASSIGN && isRestPattern(n.Left) {
				n.Right = keysCall(n.Right)
			}
		}
	})
}

func isRestPattern(e ast.Expression) bool {
	p, ok := e.(*ast.ObjectPattern)
	return ok && p.Rest != nil
}

// keysCall is keysCheck(e), placed where e is (errors point at e).
func keysCall(e ast.Expression) ast.Expression {
	return &ast.CallExpression{
		Callee:           &ast.Identifier{Name: keysCheck, Idx: e.Idx0()},
		LeftParenthesis:  e.Idx0(),
		ArgumentList:     []ast.Expression{e},
		RightParenthesis: e.Idx1() - 1,
	}
}

// installKeysCheck binds keysCheck: it refuses a value with more own keys
// than one call may copy (Object.assign's limit) when that count is known
// without running code, and returns the value unchanged.
func (s *sandbox) installKeysCheck() error {
	fn := named(s.rt, s.native(func(c goja.FunctionCall) goja.Value {
		v := arg(c.Arguments, 0)
		if n := s.elementCount("object spread", v); n > float64(s.lim.maxKeys) {
			s.fail("object spread or rest: %.0f keys is over the sandbox's limit of %d for one copy; copy the keys you need", n, s.lim.maxKeys)
		}
		return v
	}), keysCheck, 1)
	return s.rt.GlobalObject().DefineDataProperty(keysCheck, fn, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_FALSE)
}
