package offload

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// pageByRunes is page as it was first written (each line converted to
// runes): the reference the walking page must agree with.
func pageByRunes(id, text string, r ReadRange) (Page, error) {
	lines := splitLines(text)
	if text == "" {
		lines = nil
	}
	n := len(lines)
	if r.StartLine == 0 {
		r.StartLine = 1
	}
	if r.StartLine < 1 || r.StartLine > max(n, 1) || r.StartChar < 0 || (n == 0 && r.StartChar > 0) || (r.EndLine != 0 && r.EndLine < r.StartLine) {
		return Page{}, ErrBadRange
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
		line := []rune(lines[i-1])
		from := 0
		if i == r.StartLine {
			if r.StartChar > len(line) {
				return Page{}, ErrBadRange
			}
			from = r.StartChar
		}
		rest := line[from:]
		if len(rest) > budget {
			if b.Len() == 0 {
				b.WriteString(string(rest[:budget]))
				p.EndLine, p.NextStartLine, p.NextStartChar = i, i, from+budget
			} else {
				p.EndLine, p.NextStartLine = i-1, i
			}
			p.Text = b.String()
			return p, nil
		}
		b.WriteString(string(rest))
		b.WriteByte('\n')
		budget -= len(rest) + 1
		p.EndLine = i
	}
	p.Text = b.String()
	if p.EndLine < n {
		p.NextStartLine = p.EndLine + 1
	}
	return p, nil
}

// FuzzPageAgreesWithRunes: page walks lines instead of converting them to
// runes, and gives the same pages, at the caps' edges too (the seeds put
// lines of exactly MaxReadChars characters, multi-byte ones, and a page
// ending exactly at the budget).
func FuzzPageAgreesWithRunes(f *testing.F) {
	f.Add("a\nb\n\nc", 1, 0, 0, 1)
	f.Add("é\nü\n", 2, 2, 1, 1)
	f.Add("x", 1, 0, 0, MaxReadChars)
	f.Add("éa\n\n", 1, 0, 0, MaxReadChars-1)
	f.Add("ab\nc\n\nd", 1, 0, 1, MaxReadChars/2)
	f.Fuzz(func(t *testing.T, s string, start, end, startChar, repeat int) {
		if repeat < 1 || repeat > MaxReadChars+2 || !utf8.ValidString(s) {
			return // stored results are UTF-8 text (Offload refuses others: ErrNotText)
		}
		text := strings.Repeat(s, repeat)
		if len(text) > 1<<20 {
			return
		}
		r := ReadRange{StartLine: start, EndLine: end, StartChar: startChar}
		got, gerr := page("res_x", text, r)
		want, werr := pageByRunes("res_x", text, r)
		if (gerr == nil) != (werr == nil) || got != want {
			t.Fatalf("page(%q ×%d, %+v) = %+v, %v; by runes %+v, %v", s, repeat, r, got, gerr, want, werr)
		}
	})
}

// BenchmarkPage_LongLine pages once into the middle of one 4 MB line.
func BenchmarkPage_LongLine(b *testing.B) {
	text := strings.Repeat("é", 2<<20)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := page("res_x", text, ReadRange{StartChar: 1 << 20}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestClipAround_ShowsTheMatchAndKeepsShortLinesWhole(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 1000)
	for _, c := range []struct {
		line     string
		at, n    int
		want     string
		contains string
	}{
		{line: "short line with the match at its end: NEEDLE", at: 38, n: 20, want: "[... 33 chars omitted ...] end: NEEDLE"},
		{line: "short line with the match at its end: NEEDLE", at: 6, n: 20, want: "short line with the  [... 24 chars omitted ...]"},
		{line: strings.Repeat("a", 300) + "NEEDLE", at: 300, n: 400, want: strings.Repeat("a", 300) + "NEEDLE"},
		{line: long + "NEEDLE" + long, at: len(long), n: 400, contains: "[... 900 chars omitted ...] " + strings.Repeat("é", 100) + "NEEDLE"},
		{line: strings.Repeat("b", 500) + "NEEDLE", at: 200, n: 400, want: strings.Repeat("b", 400) + " [... 106 chars omitted ...]"},
	} {
		got := clipAround(c.line, c.at, c.n)
		if c.want != "" && got != c.want || c.contains != "" && !strings.HasPrefix(got, c.contains) {
			t.Errorf("clipAround(%.20q…, %d, %d) = %.60q…", c.line, c.at, c.n, got)
		}
	}
}

// FuzzClipAround: the clip is UTF-8, holds the match's first character,
// and its omitted count is where the shown text starts in the line.
func FuzzClipAround(f *testing.F) {
	f.Add(strings.Repeat("é", 100)+"X"+strings.Repeat("ü", 100), 200, 40)
	f.Add("short", 2, 40)
	f.Add(strings.Repeat("ab", 50), 99, 8)
	f.Fuzz(func(t *testing.T, line string, at, n int) {
		if !utf8.ValidString(line) || n < 4 || n > 1000 || at < 0 || at >= len(line) || !utf8.RuneStart(line[at]) ||
			strings.Contains(line, "[... ") { // the markers this parses
			return
		}
		got := clipAround(line, at, n)
		if !utf8.ValidString(got) {
			t.Fatalf("clip %q is not UTF-8", got)
		}
		shown, from := got, 0
		if strings.HasPrefix(got, "[... ") {
			var rest string
			if _, err := fmt.Sscanf(got, "[... %d chars omitted ...]", &from); err != nil {
				t.Fatalf("clip %q: %v", got, err)
			}
			_, rest, _ = strings.Cut(got, " chars omitted ...] ")
			shown = rest
		}
		shown, _, _ = strings.Cut(shown, " [... ")
		tail, _ := skipRunes(line, from)
		if !strings.HasPrefix(tail, shown) {
			t.Fatalf("clip %q does not show the line from character %d", got, from)
		}
		if before := utf8.RuneCountInString(line[:at]); before < from || before >= from+utf8.RuneCountInString(shown) {
			t.Fatalf("clip %q (from %d) leaves out the match at character %d", got, from, before)
		}
	})
}

// A line matched through stoppingReader (a costly pattern on a long line)
// matches where the string matcher does, at the same byte offsets.
func TestStoppingReader_MatchesAsTheString(t *testing.T) {
	t.Parallel()
	lines := []string{"", "abc", "héllo wörld", "日本語のテキスト end", "x\xffy", "tab\there", strings.Repeat("é", 300) + "needle" + strings.Repeat("ü", 10)}
	for _, p := range []string{`^`, `$`, `\bw`, `ö`, `needle$`, `[^\x00-\x7f]+`, `(?i)WÖR`, `y$`, `^$`, `\pL{3}`, `.{2}end`, `\xff`, `(?s).`} {
		re := regexp.MustCompile(p)
		for _, l := range lines {
			want := re.FindStringIndex(l)
			got := re.FindReaderIndex(&stoppingReader{s: l, ctx: context.Background()})
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%q in %q: reader %v, string %v", p, l, got, want)
			}
		}
	}
}
