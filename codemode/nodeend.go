package codemode

import (
	"strings"

	"github.com/dop251/goja/ast"
)

// end returns the offset in src just after n, before any parentheses around
// n. goja's Idx1 is not always that place, and the rewrite cuts the source
// where it says a statement ends:
//   - a postfix update: Idx1 is the operand's end plus 2, inside the
//     operator for `i ++`, `i /* c */ ++` or `(i)++`;
//   - a regular expression with flags: Idx1 is where the parser's next
//     token began, inside the next statement for `/a/g\nfoo()`;
//   - `new A()`: Idx1 is the end of A, and the `()` after it cannot be told
//     from the start of the next statement;
//   - every node whose Idx1 is its last child's (an assignment, an `if`, a
//     declaration, ...), which inherits its child's error.
//
// to bounds the scans (the end of the cell's code).
func end(src string, n ast.Node, to int) int {
	switch n := n.(type) {
	case *ast.UnaryExpression:
		if !n.Postfix {
			return end(src, n.Operand, to)
		}
		at := skipSpace(src, closeParens(src, end(src, n.Operand, to), to), to, "")
		if op := src[at:min(at+2, to)]; op == "++" || op == "--" {
			return at + 2
		}
	case *ast.RegExpLiteral:
		return regexpEnd(src, int(n.Idx)-1, n.Flags, to)
	case *ast.NewExpression:
		if n.LeftParenthesis == 0 {
			return end(src, n.Callee, to)
		}
		return int(n.RightParenthesis)
	case *ast.AssignExpression:
		return end(src, n.Right, to)
	case *ast.BinaryExpression:
		return end(src, n.Right, to)
	case *ast.ConditionalExpression:
		return end(src, n.Alternate, to)
	case *ast.AwaitExpression:
		return end(src, n.Argument, to)
	case *ast.YieldExpression:
		if n.Argument != nil {
			return end(src, n.Argument, to)
		}
	case *ast.SequenceExpression:
		return end(src, n.Sequence[len(n.Sequence)-1], to)
	case *ast.ArrowFunctionLiteral:
		return end(src, n.Body, to)
	case *ast.ExpressionBody:
		return end(src, n.Expression, to)
	case *ast.OptionalChain:
		return end(src, n.Expression, to)
	case *ast.Optional:
		return end(src, n.Expression, to)
	case *ast.ExpressionStatement:
		return end(src, n.Expression, to)
	case *ast.IfStatement:
		if n.Alternate != nil {
			return end(src, n.Alternate, to)
		}
		return end(src, n.Consequent, to)
	case *ast.ForStatement:
		return end(src, n.Body, to)
	case *ast.ForInStatement:
		return end(src, n.Body, to)
	case *ast.ForOfStatement:
		return end(src, n.Body, to)
	case *ast.WhileStatement:
		return end(src, n.Body, to)
	case *ast.WithStatement:
		return end(src, n.Body, to)
	case *ast.LabelledStatement:
		return end(src, n.Statement, to)
	case *ast.ReturnStatement:
		if n.Argument != nil {
			return end(src, n.Argument, to)
		}
	case *ast.ThrowStatement:
		return end(src, n.Argument, to)
	case *ast.VariableStatement:
		return end(src, n.List[len(n.List)-1], to)
	case *ast.LexicalDeclaration:
		return end(src, n.List[len(n.List)-1], to)
	case *ast.Binding:
		if n.Initializer != nil {
			return end(src, n.Initializer, to)
		}
		return end(src, n.Target, to)
	}
	return min(int(n.Idx1())-1, to)
}

// regexpEnd returns the offset after the regular expression literal at at:
// after its closing slash (not one in a class or escaped) and its flags.
func regexpEnd(src string, at int, flags string, to int) int {
	inClass := false
	for i := at + 1; i < to; i++ {
		switch src[i] {
		case '\\':
			i++
		case '[':
			inClass = true
		case ']':
			inClass = false
		case '/':
			if inClass {
				continue
			}
			i++
			if strings.HasPrefix(src[i:to], flags) {
				i += len(flags)
			}
			return i
		}
	}
	return to
}
