package codemode

import (
	"slices"
	"strings"

	"github.com/dop251/goja/ast"
)

// goja's parser, after the closing slash of a regular expression followed
// by anything but white space, reads the next token as the expression's
// flags when it is an identifier, skipping comments to find it: in
// `/a/// c` followed by a line `g`, the `g` of the next line became the
// flags (/a/g), and `/a/// c` followed by `r` a SyntaxError ("Invalid
// flags"). A valid cell was refused or changed meaning. parseCell gives such
// expressions a space after their closing slash (white space ends the
// flags there) and parses the cell again; the rewrite inserts the same
// spaces, so the code that runs is the one that was parsed.

// maxRegexpRounds bounds the parses of one cell: each round fixes every
// expression misread in the parse before it.
const maxRegexpRounds = 8

// parseCell parses orig, a wrapped cell, and returns its tree, the text the
// tree's positions index (orig with the gaps' spaces) and the gaps.
func parseCell(name, orig string) (*ast.Program, string, regexpGaps, error) {
	var gaps regexpGaps
	src := orig
	for range maxRegexpRounds {
		prog, err := parse(name, src)
		if err != nil {
			return nil, "", nil, cellSyntaxError(err, gaps.posMap(orig))
		}
		misread := misreadFlags(prog, src)
		if len(misread) == 0 {
			return prog, src, gaps, nil
		}
		for i, at := range misread {
			misread[i] = gaps.toOrig(at)
		}
		gaps = append(gaps, misread...)
		slices.Sort(gaps)
		gaps = slices.Compact(gaps)
		src = gaps.insert(orig)
	}
	return nil, "", nil, &syntaxError{msg: "SyntaxError: the cell does not parse (regular expressions followed by comments); put a space after them"}
}

// misreadFlags returns the offsets in src just after the closing slash of
// the regular expressions whose flags, as parsed, are not what follows it.
func misreadFlags(root ast.Node, src string) []int {
	// The flags can only be misread when the closing slash is followed by
	// a comment.
	if !strings.Contains(src, "///") && !strings.Contains(src, "//*") {
		return nil
	}
	var at []int
	walkNodes(root, func(n any) {
		re, ok := n.(*ast.RegExpLiteral)
		if !ok || re.Flags == "" {
			return
		}
		start := int(re.Idx) - 1
		if start < 0 || start >= len(src) || src[start] != '/' {
			return
		}
		if slash := regexpEnd(src, start, "", len(src)); !strings.HasPrefix(src[slash:], re.Flags) {
			at = append(at, slash)
		}
	})
	slices.Sort(at)
	return slices.Compact(at)
}

// regexpGaps are the offsets of a wrapped cell at which a space is inserted
// (after the closing slash of a regular expression), in increasing order.
type regexpGaps []int

// insert returns orig with the gaps' spaces.
func (g regexpGaps) insert(orig string) string {
	var b strings.Builder
	cur := 0
	for _, at := range g {
		b.WriteString(orig[cur:at])
		b.WriteByte(' ')
		cur = at
	}
	b.WriteString(orig[cur:])
	return b.String()
}

// toOrig maps an offset of the text with the spaces to orig (a space's own
// offset, and the one after it, to where it was inserted).
func (g regexpGaps) toOrig(o int) int {
	k := 0
	for k < len(g) && g[k]+k < o {
		k++
	}
	return o - k
}

// lift moves edits of the text with the spaces to orig, adding the spaces
// after the edits at their offsets (as in the text they were made for:
// an edit at a space's offset comes before it).
func (g regexpGaps) lift(ed edits) edits {
	if len(g) == 0 {
		return ed
	}
	out := make(edits, 0, len(ed)+len(g))
	for _, e := range ed {
		e.at = g.toOrig(e.at)
		out = append(out, e)
	}
	for _, at := range g {
		out.add(at, 0, " ")
	}
	return out
}

// posMap maps positions of the text with the spaces to orig.
func (g regexpGaps) posMap(orig string) *posMap {
	var ed edits
	out, anchors := g.lift(ed).apply(orig)
	return newPosMap(orig, out, anchors)
}
