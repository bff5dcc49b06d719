package codemode

import (
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"regexp"
	"regexp/syntax"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/parser"
	"github.com/dop251/goja/token"
)

// Names the rewrite reserves in cell code: a cell may not name anything
// starting with reservedPrefix (checkLiterals), so it can neither shadow nor
// reach the rewrite's parameters, and only the rewrite's names start with
// fnPrefix.
const (
	reservedPrefix = "__cm_"
	globalParam    = "__cm_global__"
	defineParam    = "__cm_define__"
	fnPrefix       = "__cm_fn_"
)

// declaredSource returns a function's source text without the prefix the
// rewrite gave its name (a cell's top-level function declaration):
// "function __cm_fn_f() {}" reads "function f() {}". Only a name in that
// place is the rewrite's; the prefix anywhere else (in a string) is the
// model's own text.
func declaredSource(src string) string {
	i := skipSpace(src, 0, len(src), "")
	if strings.HasPrefix(src[i:], "async") {
		i = skipSpace(src, i+len("async"), len(src), "")
	}
	if !strings.HasPrefix(src[i:], "function") {
		return src
	}
	i = skipSpace(src, i+len("function"), len(src), "*")
	if !strings.HasPrefix(src[i:], fnPrefix) {
		return src
	}
	return src[:i] + src[i+len(fnPrefix):]
}

// wrapperHead starts the async function a cell runs in, inside a function
// that gives it the rewrite's parameters (so the cell's top-level
// `arguments` is its own, empty). It has no newline, so the cell's line n
// is the wrapper's line n+1 (posMap maps it back); wrapperTail ends both.
const (
	wrapperHead = "(function (" + globalParam + ", " + defineParam + ") { return async function () {"
	wrapperTail = "\n}})"
)

// rewritten is a cell turned into an async function expression.
type rewritten struct {
	src string
	// globals are the top-level names the cell declares, to be declared as
	// global variables before it runs.
	globals []string
	// pos maps positions in src to the cell's code.
	pos *posMap
}

// errSyntax marks a cell that does not parse or uses what the sandbox refuses.
var errSyntax = errors.New("syntax error")

// syntaxError is a SyntaxError at a position of the cell.
type syntaxError struct {
	msg          string
	line, column int
}

func (e *syntaxError) Error() string {
	if e.line > 0 {
		return fmt.Sprintf("%s (line %d, column %d)", e.msg, e.line, e.column)
	}
	return e.msg
}

func (e *syntaxError) Unwrap() error { return errSyntax }

// rewrite makes a cell's top level behave like a notebook's: top-level
// let/const/var/function/class declarations become global variables (so
// they persist and can be declared again in a later cell), top-level await
// works, and the last expression statement is the cell's result. It also
// refuses what the sandbox cannot bound: BigInt literals and regular
// expressions that need a backtracking engine.
func rewrite(code, name string) (*rewritten, error) {
	orig := wrapperHead + "\n" + code + wrapperTail
	prog, src, gaps, err := parseCell(name, orig)
	if err != nil {
		return nil, err
	}
	fn := wrapperFunction(prog)
	if fn == nil || fn.Body == nil {
		return nil, &syntaxError{msg: "SyntaxError: the cell is not a sequence of statements (an unbalanced brace or parenthesis?)"}
	}
	f := prog.File
	if err := checkLiterals(fn.Body, f, src); err != nil {
		return nil, cellSyntaxError(err, gaps.posMap(orig))
	}
	var ed edits
	var globals []string
	var funcs []string
	seen := map[string]bool{}
	addGlobal := func(n string) {
		if !seen[n] {
			seen[n] = true
			globals = append(globals, n)
		}
	}
	stmts := fn.Body.List
	codeStart, codeEnd := len(wrapperHead)+1, len(src)-len(wrapperTail)
	for i, st := range stmts {
		switch s := st.(type) {
		case *ast.VariableStatement:
			ed.declaration(src, codeEnd, s.Var, 3, s.List, false)
			for _, b := range s.List {
				bindingNames(b.Target, addGlobal)
			}
		case *ast.LexicalDeclaration:
			kw := 3
			if s.Token == token.CONST {
				kw = 5
			}
			ed.declaration(src, codeEnd, s.Idx, kw, s.List, true)
			for _, b := range s.List {
				bindingNames(b.Target, addGlobal)
			}
		case *ast.FunctionDeclaration:
			if id := s.Function.Name; id != nil {
				n := string(id.Name)
				ed.add(int(id.Idx)-1, len(n), fnPrefix+n)
				if !seen[n] {
					funcs = append(funcs, n)
				}
				addGlobal(n)
			}
		case *ast.ClassDeclaration:
			if id := s.Class.Name; id != nil {
				n := string(id.Name)
				ed.add(int(s.Class.Class)-1, 0, globalParam+"."+n+" = ")
				ed.add(int(s.Class.Idx1())-1, 0, ";")
				addGlobal(n)
			}
		case *ast.ExpressionStatement:
			if i == len(stmts)-1 {
				// The expression's own positions exclude parentheses around
				// it, so the statement's start is found after the previous
				// statement, and its end after the closing parentheses.
				from := codeStart
				if i > 0 {
					from = closeParens(src, end(src, stmts[i-1], codeEnd), codeEnd)
				}
				start := skipSpace(src, from, codeEnd, ";")
				// The ; ends a statement the parser would continue with
				// `return` (found by FuzzRewrite: `let\n0`).
				ed.add(start, 0, ";return (")
				stop := skipSpace(src, closeParens(src, end(src, s.Expression, codeEnd), codeEnd), codeEnd, "")
				if stop < codeEnd && src[stop] == ';' {
					ed.add(stop, 1, "\n);")
				} else {
					ed.add(codeEnd, 0, "\n);")
				}
			}
		}
	}
	// Hoisted functions become globals before any statement runs.
	var prelude strings.Builder
	for _, n := range funcs {
		fmt.Fprintf(&prelude, " %s(%q, %s%s);", defineParam, n, fnPrefix, n)
	}
	ed.add(len(wrapperHead), 0, prelude.String())
	out, anchors := gaps.lift(ed).apply(orig)
	return &rewritten{src: out, globals: globals, pos: newPosMap(orig, out, anchors)}, nil
}

// parse parses src; goja's parser panics on some malformed input (found by
// FuzzRun: "let[...0("), which is a syntax error like any other.
func parse(name, src string) (prog *ast.Program, err error) {
	defer func() {
		if p := recover(); p != nil {
			prog, err = nil, &syntaxError{msg: "SyntaxError: the cell does not parse (unexpected end or token)"}
		}
	}()
	prog, err = parser.ParseFile(nil, name, src, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, parseError(err)
	}
	return prog, nil
}

// compile parses and compiles code to run. goja's Compile (and RunString)
// parse with source maps on: a `//# sourceMappingURL=` comment on the code's
// last line made the server read the file it names (any path, relative to
// the process's directory, /dev/zero included) and remap the cell's
// positions with it.
func compile(name, src string) (*goja.Program, error) {
	prog, err := parse(name, src)
	if err != nil {
		return nil, err
	}
	fixArrowSources(prog, src)
	checkObjectCopies(prog)
	return goja.CompileAST(prog, false)
}

// soleExpression is the expression of a program that is one expression
// statement and nothing else (the wrappers' shape), or nil.
func soleExpression(prog *ast.Program) ast.Expression {
	if len(prog.Body) != 1 {
		return nil
	}
	if es, ok := prog.Body[0].(*ast.ExpressionStatement); ok {
		return es.Expression
	}
	return nil
}

// wrapperFunction finds the cell's async function in the parsed wrapper.
func wrapperFunction(prog *ast.Program) *ast.FunctionLiteral {
	outer, _ := soleExpression(prog).(*ast.FunctionLiteral)
	if outer == nil || outer.Body == nil || len(outer.Body.List) != 1 {
		return nil
	}
	ret, _ := outer.Body.List[0].(*ast.ReturnStatement)
	if ret == nil {
		return nil
	}
	fn, _ := ret.Argument.(*ast.FunctionLiteral)
	return fn
}

// skipSpace returns the offset of the first character at or after from
// (before to) that is not white space, a comment or one of extra.
func skipSpace(src string, from, to int, extra string) int {
	i := from
	for i < to {
		switch c := src[i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f' || strings.IndexByte(extra, c) >= 0:
			i++
		case strings.HasPrefix(src[i:], "//"):
			// A line comment ends at any line terminator.
			for i < to && src[i] != '\n' && src[i] != '\r' && !strings.HasPrefix(src[i:], "\u2028") && !strings.HasPrefix(src[i:], "\u2029") {
				i++
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:to], "*/")
			if end < 0 {
				return to
			}
			i += end + 4
		default:
			if c >= 0x80 { // non-ASCII white space (no-break space, line separators)
				r, n := utf8.DecodeRuneInString(src[i:])
				if unicode.IsSpace(r) || r == '\ufeff' {
					i += n
					continue
				}
			}
			return i
		}
	}
	return to
}

// parseError turns a parser error into a SyntaxError at the cell's position.
func parseError(err error) error {
	var list parser.ErrorList
	if errors.As(err, &list) && len(list) > 0 {
		e := list[0]
		line := e.Position.Line - 1
		if line < 1 {
			line = 1
		}
		return &syntaxError{msg: "SyntaxError: " + e.Message, line: line, column: e.Position.Column}
	}
	return &syntaxError{msg: "SyntaxError: " + err.Error()}
}

// edits are text insertions and replacements at byte offsets of the source.
type edits []edit

type edit struct {
	at, del int
	text    string
	seq     int
}

func (e *edits) add(at, del int, text string) {
	*e = append(*e, edit{at: at, del: del, text: text, seq: len(*e)})
}

// declaration turns `let a = 1, {b} = o` into `;(a = 1, {b} = o);` (an
// assignment to the globals the cell declares); `let x` assigns undefined
// (a new binding starts undefined), `var x` leaves x as it was.
func (e *edits) declaration(src string, codeEnd int, kwAt file.Idx, kwLen int, list []*ast.Binding, lexical bool) {
	e.add(int(kwAt)-1, kwLen, ";(")
	for _, b := range list {
		if b.Initializer == nil && lexical {
			e.add(end(src, b.Target, codeEnd), 0, " = undefined")
		}
	}
	e.add(closeParens(src, end(src, list[len(list)-1], codeEnd), codeEnd), 0, ");")
}

// closeParens returns the offset after the closing parentheses that follow
// at (across white space and comments), else at. A node's end (see end)
// excludes the parentheses around its last expression: the end of
// `let o = (1)` or of `const f = () => ({a: 1})` is before their last `)`.
// At the top level of a cell no other `)` can follow a statement, and
// inside a postfix update only the operand's own parentheses can come
// before the operator.
func closeParens(src string, at, to int) int {
	for {
		j := skipSpace(src, at, to, "")
		if j >= to || src[j] != ')' {
			return at
		}
		at = j + 1
	}
}

// apply applies the edits in order of offset (edits at one offset in
// their order of addition) and returns where the runs of inserted and of
// kept text start, for the position map.
func (e edits) apply(src string) (string, []anchor) {
	sort.SliceStable(e, func(i, j int) bool {
		if e[i].at != e[j].at {
			return e[i].at < e[j].at
		}
		return e[i].seq < e[j].seq
	})
	var b strings.Builder
	anchors := []anchor{{}}
	cur := 0
	for _, x := range e {
		at := max(x.at, cur) // not inside what an earlier edit replaced
		b.WriteString(src[cur:at])
		anchors = append(anchors, anchor{rw: b.Len(), orig: at, inserted: true})
		b.WriteString(x.text)
		cur = at + x.del
		anchors = append(anchors, anchor{rw: b.Len(), orig: cur})
	}
	b.WriteString(src[cur:])
	return b.String(), anchors
}

// bindingNames reports the identifiers a declaration target binds.
func bindingNames(t ast.Expression, add func(string)) {
	switch t := t.(type) {
	case *ast.Identifier:
		add(string(t.Name))
	case *ast.ArrayPattern:
		for _, el := range t.Elements {
			bindingNames(el, add)
		}
		bindingNames(t.Rest, add)
	case *ast.ObjectPattern:
		for _, p := range t.Properties {
			switch p := p.(type) {
			case *ast.PropertyShort:
				add(string(p.Name.Name))
			case *ast.PropertyKeyed:
				bindingNames(p.Value, add)
			}
		}
		bindingNames(t.Rest, add)
	case *ast.AssignExpression:
		bindingNames(t.Left, add)
	}
}

var (
	regexpType   = reflect.TypeFor[*ast.RegExpLiteral]()
	numberType   = reflect.TypeFor[*ast.NumberLiteral]()
	identType    = reflect.TypeFor[ast.Identifier]()
	identPtrType = reflect.TypeFor[*ast.Identifier]()
	arrowType    = reflect.TypeFor[*ast.ArrowFunctionLiteral]()
	funcType     = reflect.TypeFor[*ast.FunctionLiteral]()
	shortType    = reflect.TypeFor[ast.PropertyShort]()
	privateType  = reflect.TypeFor[ast.PrivateIdentifier]()
	fileIdxType  = reflect.TypeFor[file.Idx]()
	maxASTVisits = 1 << 22
)

// checkLiterals walks the cell's syntax tree for literals the sandbox
// refuses. The tree's node types have no walker of their own, so this one
// follows every exported field that holds nodes.
//
// With src (the text the tree's positions index), it also refuses an
// identifier that starts with reservedPrefix, and one not spelled in src as
// its name: one with non-ASCII letters or
// a \u escape. The parser gives an identifier's end as its start plus the
// length of its decoded name, which for those is not its length in src, so
// the rewrite's edits would land in the wrong place (found by FuzzRun:
// "const A0ϗ" cut the source out of range).
func checkLiterals(root ast.Node, f *file.File, src string) error {
	visits := 0
	inArrow := false // inside an arrow function, not in a function within it
	argumentsInArrow := func(idx file.Idx) error {
		p := f.Position(int(idx) - f.Base())
		return &syntaxError{msg: "SyntaxError: `arguments` inside an arrow function is not available in this sandbox; " +
			"use a rest parameter (...args) or a regular function", line: p.Line - 1, column: p.Column}
	}
	var walk func(v reflect.Value) error
	walk = func(v reflect.Value) error {
		if visits++; visits > maxASTVisits {
			return &syntaxError{msg: "SyntaxError: the cell is too complex to check; split it"}
		}
		switch v.Kind() {
		case reflect.Interface, reflect.Pointer:
			if v.IsNil() {
				return nil
			}
			switch v.Type() {
			case regexpType:
				re := v.Interface().(*ast.RegExpLiteral)
				if err := checkPattern(re.Pattern, re.Flags); err != nil {
					p := f.Position(int(re.Idx) - f.Base())
					return &syntaxError{msg: "SyntaxError: " + err.Error(), line: p.Line - 1, column: p.Column}
				}
				return nil
			case numberType:
				n := v.Interface().(*ast.NumberLiteral)
				if _, ok := n.Value.(*big.Int); ok {
					p := f.Position(int(n.Idx) - f.Base())
					return &syntaxError{msg: "SyntaxError: BigInt literals are not available in this sandbox; use numbers", line: p.Line - 1, column: p.Column}
				}
				return nil
			case arrowType, funcType:
				// goja panics when an arrow function that reads its
				// enclosing function's `arguments` is called (its
				// compiler indexes past the stack): the cell would abort
				// and the kernel reset. Refused instead.
				outer := inArrow
				inArrow = v.Type() == arrowType
				err := walk(v.Elem())
				inArrow = outer
				return err
			case identPtrType:
				if id := v.Interface().(*ast.Identifier); inArrow && id.Name == "arguments" {
					return argumentsInArrow(id.Idx)
				}
			}
			return walk(v.Elem())
		case reflect.Struct:
			switch v.Type() {
			case fileIdxType:
				return nil
			case shortType:
				if ps := v.Interface().(ast.PropertyShort); inArrow && ps.Name.Name == "arguments" {
					return argumentsInArrow(ps.Name.Idx)
				}
			case privateType:
				// A class's #name: its position is the #, and the rewrite
				// never cuts inside a class body, so its spelling is not
				// checked.
				return nil
			case identType:
				// A value, not a pointer, in some nodes (a.b's b, {b}'s b).
				if src == "" {
					return nil
				}
				id := v.Interface().(ast.Identifier)
				if strings.HasPrefix(string(id.Name), reservedPrefix) {
					p := f.Position(int(id.Idx) - f.Base())
					return &syntaxError{msg: fmt.Sprintf("SyntaxError: identifier %q: names starting with %s are reserved by the sandbox; rename it", id.Name.String(), reservedPrefix),
						line: p.Line - 1, column: p.Column}
				}
				if at := int(id.Idx) - 1; at < 0 || at+len(id.Name) > len(src) || src[at:at+len(id.Name)] != string(id.Name) {
					p := f.Position(int(id.Idx) - f.Base())
					return &syntaxError{msg: fmt.Sprintf("SyntaxError: identifier %q: names in this sandbox are written in ASCII letters, digits, _ and $, without \\u escapes; rename it", id.Name.String()),
						line: p.Line - 1, column: p.Column}
				}
				return nil
			}
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					if err := walk(v.Field(i)); err != nil {
						return err
					}
				}
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Uint8 || v.Type().Elem().Kind() == reflect.Uint16 {
				return nil
			}
			for i := range v.Len() {
				if err := walk(v.Index(i)); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(reflect.ValueOf(root))
}

// errBacktracking is why a pattern is refused.
var errBacktracking = errors.New("this regular expression needs a backtracking engine (lookaround, a backreference or a repeat count over 1000), which the sandbox does not run because its time cannot be bounded; rewrite it without them")

// checkPattern accepts a pattern only when goja can run it on Go's regexp
// (linear time); goja falls back to a backtracking engine otherwise.
func checkPattern(pattern, flags string) error {
	re2, err := parser.TransformRegExp(pattern, strings.Contains(flags, "s"), strings.Contains(flags, "u"))
	if err != nil {
		var incompat parser.RegexpErrorIncompatible
		if errors.As(err, &incompat) {
			return errBacktracking
		}
		return nil // invalid patterns fail in goja with its own message
	}
	if _, err := regexp.Compile(re2); err != nil {
		var se *syntax.Error
		if errors.As(err, &se) && se.Code == syntax.ErrInvalidRepeatSize {
			return errBacktracking
		}
	}
	return nil
}
