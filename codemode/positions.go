package codemode

import (
	"errors"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dop251/goja/file"
)

// posMap maps a position (goja's: 1-based line, 1-based byte column) in a
// cell's rewritten source to the same place in the cell's own code, so the
// model reads its own line and column numbers in errors and stacks. The
// rewrite's insertions and replacements shift columns on their lines (the
// last expression's "\n);" also adds a line after it). Columns in the
// cell's code are counted as JavaScript counts them (String.prototype.length,
// and the columns of browsers' and Node's stacks): in UTF-16 code units, so
// "é" before an error counts 1, not its 2 bytes.
type posMap struct {
	// runs are in order of their start in the rewritten source; each lasts
	// until the next. Outside inserted text the rewritten and the wrapped
	// code are the same text from (rwLine, rwCol) and (line, col) on.
	runs []posRun
	// orig is the wrapped code; lineStarts, made when first needed, are
	// the offsets its lines start at (as goja counts lines).
	orig       string
	lineStarts []int
}

type posRun struct {
	rwLine, rwCol int
	line, col     int // in the wrapped code: the cell's line n is line n+1
	// inserted: the run is text the rewrite added; every position in it
	// maps to (line, col), where it was added.
	inserted bool
}

// anchor is where a run starts, as byte offsets of both sources.
type anchor struct {
	rw, orig int
	inserted bool
}

func newPosMap(orig, rw string, anchors []anchor) *posMap {
	of, rf := file.NewFile("", orig, 1), file.NewFile("", rw, 1)
	m := &posMap{runs: make([]posRun, 0, len(anchors)), orig: orig}
	for _, a := range anchors {
		o, r := of.Position(a.orig), rf.Position(a.rw)
		m.runs = append(m.runs, posRun{rwLine: r.Line, rwCol: r.Column, line: o.Line, col: o.Column, inserted: a.inserted})
	}
	return m
}

// cellPos returns the position in the cell's code of (line, col) of the
// rewritten source. Positions in the wrapper's own first line map to the
// cell's start.
func (m *posMap) cellPos(line, col int) (int, int) {
	i := sort.Search(len(m.runs), func(i int) bool {
		r := m.runs[i]
		return r.rwLine > line || r.rwLine == line && r.rwCol > col
	}) - 1
	if i >= 0 {
		r := m.runs[i]
		switch {
		case r.inserted:
			line, col = r.line, r.col
		case r.rwLine == line:
			line, col = r.line, r.col+col-r.rwCol
		default:
			line = r.line + line - r.rwLine
		}
	}
	if line <= 1 {
		return 1, 1
	}
	return line - 1, m.utf16Column(line, col)
}

// utf16Column turns a byte column of the wrapped code's line into the
// column in UTF-16 code units.
func (m *posMap) utf16Column(line, col int) int {
	if m.lineStarts == nil {
		m.lineStarts = lineStarts(m.orig)
	}
	if line < 1 || line > len(m.lineStarts) || col < 1 {
		return col
	}
	from := m.lineStarts[line-1]
	to := min(from+col-1, len(m.orig))
	n := 1
	for _, r := range m.orig[from:to] {
		n += max(1, utf16.RuneLen(r))
	}
	return n
}

// lineStarts returns the offsets at which the lines of s start, with the
// line terminators goja counts (\n, \r, \r\n, U+2028, U+2029).
func lineStarts(s string) []int {
	starts := []int{0}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\r' && i+1 < len(s) && s[i+1] == '\n':
			n = 2
			fallthrough
		case r == '\n' || r == '\r' || r == '\u2028' || r == '\u2029':
			starts = append(starts, i+n)
		}
		i += n
	}
	return starts
}

// stackPos matches goja's "cell[N]:line:col(pc)" positions, and
// "saved[name]:line:col(pc)" in the source of a restored variable.
var stackPos = regexp.MustCompile(`((?:cell\[\d+\])|(?:saved\[[A-Za-z0-9_$]+\])):(\d+):(\d+)(\(\d+\))?`)

// cellPositions keeps the position maps of a kernel's recent cells: a
// function a cell defined can fail in a later cell, with a stack in the
// defining cell's positions.
type cellPositions struct {
	maps  map[string]*posMap
	order []string
}

// maxCellPositions is how many cells' maps a kernel keeps; positions in
// older cells are given by line alone ("cell[N]:line"): the rewrite keeps
// a cell's lines, but goja's column is in bytes of the rewritten line (the
// rewrite's insertions and the bytes of non-ASCII text counted), which
// without the cell's map cannot be turned into the model's column.
const maxCellPositions = 64

func (p *cellPositions) add(name string, m *posMap) {
	if p.maps == nil {
		p.maps = map[string]*posMap{}
	}
	if _, ok := p.maps[name]; !ok && !strings.HasPrefix(name, "saved[") {
		// A restored variable's map is kept as long as the kernel: there
		// is one per variable of the state it started from.
		p.order = append(p.order, name)
	}
	p.maps[name] = m
	if len(p.order) > maxCellPositions {
		delete(p.maps, p.order[0])
		p.order = p.order[1:]
	}
}

// generatedFrame matches a stack frame of a function the rewrite renamed
// (a cell's top-level function declaration): cell code cannot name anything
// __cm_ (checkLiterals), so only these frames start with the prefix; a
// message, or a name that merely contains it, is the model's own text.
var generatedFrame = regexp.MustCompile(`(?m)^\tat ` + fnPrefix + `([A-Za-z0-9_$]+ \(cell\[)`)

// fixStack maps the cells' positions in s (a stack or a compiler's message)
// to the cells' own code and drops goja's program counters and the names
// the rewrite gave hoisted functions.
func (p *cellPositions) fixStack(s string) string {
	s = stackPos.ReplaceAllStringFunc(s, func(match string) string {
		sm := stackPos.FindStringSubmatch(match)
		line, _ := strconv.Atoi(sm[2])
		col, _ := strconv.Atoi(sm[3])
		m := p.maps[sm[1]]
		if m == nil {
			return sm[1] + ":" + strconv.Itoa(max(line-1, 1))
		}
		line, col = m.cellPos(line, col)
		return sm[1] + ":" + strconv.Itoa(line) + ":" + strconv.Itoa(col)
	})
	return generatedFrame.ReplaceAllString(s, "\tat $1")
}

// cellSyntaxError maps the position of a SyntaxError in the rewritten
// source (parse gives it as the wrapped code's line minus one) to the
// cell's code.
func cellSyntaxError(err error, m *posMap) error {
	var se *syntaxError
	if m == nil || !errors.As(err, &se) || se.line <= 0 {
		return err
	}
	line, col := m.cellPos(se.line+1, se.column)
	return &syntaxError{msg: se.msg, line: line, column: col}
}

// savedSource wraps a restored variable's source as the value of a
// property named like the variable, so that an arrow or anonymous function
// gets its name back as its declaration gave it, and its first line starts
// a line as a cell's code does (the source's line n is line n+1). It
// returns the program's name and the map of its positions.
func savedSource(name, src string) (string, string, *posMap) {
	wrapped := "({[\"" + name + "\"]:\n" + src + "\n})[\"" + name + "\"]"
	return "saved[" + name + "]", wrapped, newPosMap(wrapped, wrapped, []anchor{{}})
}
