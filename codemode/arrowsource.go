package codemode

import (
	"reflect"
	"sort"

	"github.com/dop251/goja/ast"
)

// goja's parser gives an arrow function with an expression body, as its
// source text (what Function.prototype.toString returns, and so what a
// snapshot saves), the text from its start to its body's Idx1. That is not
// the body's end for the nodes end (nodeend.go) corrects, and it leaves out
// the parentheses around the body: `x => x ++` read "x => x +" and
// `x => ({a: x})` read "x => ({a: x}", so the restored variable failed to
// parse (and was lost) or meant something else.

// fixArrowSources sets the source text of every arrow function with an
// expression body in root (parsed from src, at base 1) to its true span:
// from its start to the end of its body (end), followed by the closing
// parentheses of those the arrow's own text left open.
func fixArrowSources(root ast.Node, src string) {
	var arrows []*ast.ArrowFunctionLiteral
	var opaque []span // string and regular expression literals
	walkNodes(root, func(n any) {
		switch n := n.(type) {
		case *ast.ArrowFunctionLiteral:
			if _, ok := n.Body.(*ast.ExpressionBody); ok {
				arrows = append(arrows, n)
			}
		case *ast.StringLiteral:
			if at := int(n.Idx) - 1; at >= 0 && at < len(src) && (src[at] == '"' || src[at] == '\'') {
				opaque = append(opaque, span{at, quotedEnd(src, at)})
			}
		case *ast.RegExpLiteral:
			if at := int(n.Idx) - 1; at >= 0 && at < len(src) && src[at] == '/' {
				opaque = append(opaque, span{at, regexpEnd(src, at, "", len(src))})
			}
		}
	})
	if len(arrows) == 0 {
		return
	}
	type bounds struct{ from, to int }
	spans := make([]bounds, len(arrows))
	var at []int
	for i, a := range arrows {
		from, to := int(a.Start)-1, end(src, a.Body, len(src))
		if from < 0 || to > len(src) || to < from {
			from, to = -1, -1 // positions that cannot be right: goja's text stays
		} else {
			at = append(at, from, to)
		}
		spans[i] = bounds{from, to}
	}
	open := parenDepths(src, opaque, at)
	for i, a := range arrows {
		b := spans[i]
		if b.from < 0 {
			continue
		}
		stop := b.to
		for n := open[b.to] - open[b.from]; n > 0; n-- {
			j := skipSpace(src, stop, len(src), "")
			if j >= len(src) || src[j] != ')' {
				break
			}
			stop = j + 1
		}
		a.Source = src[b.from:stop]
	}
}

// span is a range of byte offsets, [from, to).
type span struct{ from, to int }

// parenDepths returns, for each offset in at, how many parentheses src
// opens and does not close before it, outside opaque (string and regular
// expression literals), comments and the text of template literals (the
// tree's template elements do not say where their text starts, so
// templates are scanned here, their substitutions as code).
func parenDepths(src string, opaque []span, at []int) map[int]int {
	sort.Slice(opaque, func(i, j int) bool { return opaque[i].from < opaque[j].from })
	sort.Ints(at)
	depths := make(map[int]int, len(at))
	depth, next := 0, 0
	record := func(i int) {
		for ; next < len(at) && at[next] <= i; next++ {
			depths[at[next]] = depth
		}
	}
	t := templates{src: src}
	for i := 0; i < len(src); {
		record(i)
		if len(opaque) > 0 && opaque[0].from <= i {
			i = max(i, opaque[0].to)
			opaque = opaque[1:]
			continue
		}
		switch c := src[i]; {
		case c == '(':
			depth++
			i++
		case c == ')':
			depth--
			i++
		case c == '{':
			t.braces++
			i++
		case c == '}':
			i = t.closeBrace(i)
		case c == '`':
			i = t.text(i + 1)
		case c == '/' && i+1 < len(src) && (src[i+1] == '/' || src[i+1] == '*'):
			i = skipSpace(src, i, len(src), "")
		default:
			i++
		}
	}
	record(len(src))
	return depths
}

// templates follows the template literals of code being scanned: braces
// are the braces open in the code, subs those open before each ${ still
// open.
type templates struct {
	src    string
	braces int
	subs   []int
}

// closeBrace passes the } at at: it returns the offset after it, or, when it
// closes a substitution, after the template text that follows.
func (t *templates) closeBrace(at int) int {
	t.braces--
	if n := len(t.subs); n > 0 && t.braces == t.subs[n-1] {
		t.subs = t.subs[:n-1]
		return t.text(at + 1)
	}
	return at + 1
}

// text passes template text from at: it returns the offset after its
// closing backquote, or after the ${ of a substitution (now open).
func (t *templates) text(at int) int {
	src := t.src
	for i := at; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case '`':
			return i + 1
		case '$':
			if i+1 < len(src) && src[i+1] == '{' {
				t.subs = append(t.subs, t.braces)
				t.braces++
				return i + 2
			}
		}
	}
	return len(src)
}

// quotedEnd returns the offset after the string literal whose opening
// quote is at at.
func quotedEnd(src string, at int) int {
	for i := at + 1; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case src[at]:
			return i + 1
		}
	}
	return len(src)
}

// walkNodes calls visit with every node of the syntax tree at root. The
// tree's node types have no walker of their own, so this one follows every
// exported field that holds nodes.
func walkNodes(root ast.Node, visit func(any)) {
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Interface, reflect.Pointer:
			if v.IsNil() {
				return
			}
			if v.Kind() == reflect.Pointer {
				visit(v.Interface())
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
	walk(reflect.ValueOf(root))
}
