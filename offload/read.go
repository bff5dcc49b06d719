package offload

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"regexp/syntax"
	"strings"
	"time"
	"unicode/utf8"
)

// ReadRange selects a page of a result: lines are 1-based and inclusive;
// zero StartLine is 1, zero EndLine is as far as the caps allow. StartChar
// skips characters of the start line (to page through one very long line);
// past the line's end it is ErrBadRange, as StartLine past the result's is.
type ReadRange struct {
	StartLine int `json:"start_line,omitempty"`
	EndLine   int `json:"end_line,omitempty"`
	StartChar int `json:"start_char,omitempty"`
}

// Page is one page of a stored result. NextStartLine (and NextStartChar)
// say where the next page starts; zero when the result is done.
type Page struct {
	ResultID      string `json:"result_id"`
	Text          string `json:"text"`
	StartLine     int    `json:"start_line"`
	EndLine       int    `json:"end_line"`
	LineCount     int    `json:"line_count"`
	NextStartLine int    `json:"next_start_line,omitempty"`
	NextStartChar int    `json:"next_start_char,omitempty"`
}

// Read returns one page of a result readable by s, at most MaxReadLines
// lines and MaxReadChars characters.
func (o *Offloader) Read(ctx context.Context, s Scope, id string, r ReadRange) (Page, error) {
	text, _, err := o.Get(ctx, s, id)
	if err != nil {
		return Page{}, err
	}
	return page(id, text, r)
}

func page(id, text string, r ReadRange) (Page, error) {
	lines := splitLines(text)
	if text == "" {
		lines = nil
	}
	n := len(lines)
	if r.StartLine == 0 {
		r.StartLine = 1
	}
	if r.StartLine < 1 || r.StartLine > max(n, 1) || r.StartChar < 0 || (n == 0 && r.StartChar > 0) || (r.EndLine != 0 && r.EndLine < r.StartLine) {
		return Page{}, fmt.Errorf("%w: start_line %d, end_line %d, start_char %d for a result of %d lines", ErrBadRange, r.StartLine, r.EndLine, r.StartChar, n)
	}
	end := r.StartLine + MaxReadLines - 1
	if r.EndLine != 0 {
		end = min(end, r.EndLine)
	}
	end = min(end, n)
	p := Page{ResultID: id, StartLine: r.StartLine, LineCount: n}
	var b strings.Builder
	budget := MaxReadChars
	for i := r.StartLine; i <= end; i++ {
		// Lines are walked, not converted to runes: paging through one
		// long line (StartChar) costs each page its own characters, not
		// the whole line's.
		rest, from := lines[i-1], 0
		if i == r.StartLine {
			if rest, from = skipRunes(rest, r.StartChar); from < r.StartChar {
				return Page{}, fmt.Errorf("%w: start_char %d is past the end of line %d (%d characters)", ErrBadRange, r.StartChar, i, from)
			}
		}
		head, n := skipRunes(rest, max(budget, 0))
		if head != "" || budget < 0 { // the line does not fit the page
			if b.Len() == 0 {
				b.WriteString(rest[:len(rest)-len(head)])
				p.EndLine, p.NextStartLine, p.NextStartChar = i, i, from+budget
			} else {
				p.EndLine, p.NextStartLine = i-1, i
			}
			p.Text = b.String()
			return p, nil
		}
		budget -= n + 1
		b.WriteString(rest)
		b.WriteByte('\n')
		p.EndLine = i
	}
	p.Text = b.String()
	if p.EndLine < n {
		p.NextStartLine = p.EndLine + 1
	}
	return p, nil
}

// Match is one line of a result matching a search.
type Match struct {
	LineNumber int      `json:"line_number"`
	Line       string   `json:"line"`
	Before     []string `json:"before,omitempty"`
	After      []string `json:"after,omitempty"`
}

// MaxSearchTime bounds one search's scan. RE2 is linear in the text, but
// times the pattern's program: a counted repetition (".{0,100}x") costs
// tens of nanoseconds per byte per instruction, minutes over an 8 MB
// result, and regexp takes no context.
const MaxSearchTime = 10 * time.Second

// ErrSearchTooSlow: a search that did not finish within MaxSearchTime.
var ErrSearchTooSlow = fmt.Errorf("offload: the search did not finish within %s: the pattern is too costly on this result; simplify it (fewer counted repetitions such as .{0,100}, fewer alternatives) or anchor it with literal text", MaxSearchTime)

// Search returns up to MaxMatches lines of a result readable by s matching
// pattern (Go RE2 syntax), each with up to contextLines (≤ MaxContextLines)
// lines around it; lines are clipped to MaxMatchLineChars characters, a
// matching line around its first match (see clipAround). The scan stops
// with ErrSearchTooSlow after MaxSearchTime, and with ctx's error when ctx
// ends.
func (o *Offloader) Search(ctx context.Context, s Scope, id, pattern string, contextLines int) ([]Match, error) {
	re, err := compile(pattern)
	if err != nil {
		return nil, err
	}
	text, _, err := o.Get(ctx, s, id)
	if err != nil {
		return nil, err
	}
	return search(ctx, text, re, contextLines, o.searchTime)
}

// searcher is a compiled pattern and the size of its program, which
// bounds what matching costs per byte.
type searcher struct {
	re    *regexp.Regexp
	insts int
}

func compile(pattern string) (searcher, error) {
	if pattern == "" {
		return searcher{}, fmt.Errorf("%w: empty pattern", ErrBadPattern)
	}
	if len(pattern) > MaxPatternBytes {
		return searcher{}, ErrPatternTooLong
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return searcher{}, fmt.Errorf("%w: %w", ErrBadPattern, err)
	}
	// regexp compiles the same way: it parsed and compiled this pattern
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return searcher{}, fmt.Errorf("%w: %w", ErrBadPattern, err)
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return searcher{}, fmt.Errorf("%w: %w", ErrBadPattern, err)
	}
	return searcher{re: re, insts: len(prog.Inst)}, nil
}

// cheapLine bounds a line's bytes times the program's instructions below
// which the line is matched as a string (in well under a second whatever
// the pattern), uninterrupted; a costlier line is matched through a reader
// that stops when the scan must.
const cheapLine = 1 << 22

func search(ctx context.Context, text string, se searcher, contextLines int, limit time.Duration) ([]Match, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	stopped := func() error {
		if ctx.Err() == nil {
			return nil
		}
		if err := parent.Err(); err != nil {
			return err
		}
		return ErrSearchTooSlow
	}
	contextLines = min(max(contextLines, 0), MaxContextLines)
	lines := splitLines(text)
	var out []Match
	clip := func(ls []string) []string {
		if len(ls) == 0 {
			return nil
		}
		c := make([]string, len(ls))
		for i, l := range ls {
			c[i] = clipLine(l, MaxMatchLineChars)
		}
		return c
	}
	for i, l := range lines {
		if err := stopped(); err != nil {
			return nil, err
		}
		var loc []int
		if len(l)*se.insts <= cheapLine {
			loc = se.re.FindStringIndex(l)
		} else {
			r := &stoppingReader{s: l, ctx: ctx}
			loc = se.re.FindReaderIndex(r)
			if r.stopped {
				return nil, stopped()
			}
		}
		if loc == nil {
			continue
		}
		out = append(out, Match{LineNumber: i + 1, Line: clipAround(l, loc[0], MaxMatchLineChars),
			Before: clip(lines[max(0, i-contextLines):i]), After: clip(lines[i+1 : min(len(lines), i+1+contextLines)])})
		if len(out) == MaxMatches {
			break
		}
	}
	return out, nil
}

// stoppingReader reads a line to the matcher rune by rune and ends it
// early (stopped) once ctx is done, so that a costly match of one long
// line can be cut.
type stoppingReader struct {
	s       string
	i, n    int
	ctx     context.Context
	stopped bool
}

func (r *stoppingReader) ReadRune() (rune, int, error) {
	if r.i >= len(r.s) || r.stopped {
		return 0, 0, io.EOF
	}
	if r.n++; r.n%256 == 0 && r.ctx.Err() != nil {
		r.stopped = true
		return 0, 0, io.EOF
	}
	c, size := utf8.DecodeRuneInString(r.s[r.i:])
	r.i += size
	return c, size, nil
}

// clipAround clips a line to n characters that show the match starting at
// byte at: a line longer than n whose match starts past three quarters of
// n is clipped from a quarter of n before the match, saying how many
// characters it skipped ("[... 29900 chars omitted ...] "): the start_char
// read_result takes to read on from there.
func clipAround(line string, at, n int) string {
	before := utf8.RuneCountInString(line[:at])
	if before <= n*3/4 || utf8.RuneCountInString(line) <= n {
		return clipLine(line, n)
	}
	from := before - n/4
	rest, _ := skipRunes(line, from)
	return fmt.Sprintf("[... %d chars omitted ...] %s", from, clipLine(rest, n))
}

// skipRunes returns s after its first n characters, and how many it
// skipped (fewer than n when s is shorter).
func skipRunes(s string, n int) (string, int) {
	i, k := 0, 0
	for k < n && i < len(s) {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	return s[i:], k
}
