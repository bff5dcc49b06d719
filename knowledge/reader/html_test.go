package reader

import (
	"errors"
	"strings"
	"testing"
)

// Quotes and lists nested hundreds deep repeat their markers on every line
// of everything inside them, and the converter rewrites the whole inside at
// each level: 166 KB of HTML took three minutes and rendered to 40 MB. Past
// maxHTMLNesting the markers stop (the text stays).
func TestRead_HTMLNestingAmplificationBounded(t *testing.T) {
	t.Parallel()
	para := "<p>the quoted words of a reply</p>"
	for _, open := range []string{"<blockquote>", "<ul><li>", "<ol><li>"} {
		in := strings.Repeat(open, 200) + strings.Repeat(para, 2000)
		out, err := Read(HTML, []byte(in))
		if err != nil {
			t.Fatalf("%s: %v", open, err)
		}
		if n := strings.Count(out, "the quoted words of a reply"); n != 2000 {
			t.Fatalf("%s: %d of the 2000 paragraphs rendered", open, n)
		}
		if len(out) > 4*len(in) {
			t.Fatalf("%s nested 200 deep: %d bytes of HTML rendered to %d", open, len(in), len(out))
		}
	}
	// within the bound the nesting shows
	out, err := Read(HTML, []byte("<blockquote><blockquote><p>x</p></blockquote></blockquote>"))
	if err != nil || !strings.Contains(out, "> > x") {
		t.Fatalf("two quotes: %q %v", out, err)
	}
	if _, err := Read(HTML, []byte(strings.Repeat("<div>", 600))); !errors.Is(err, ErrMalformed) {
		t.Fatalf("600 open elements: %v", err)
	}
}

// A table's cells stay apart, as a Markdown table: before, every cell of a
// page's tables ran into the next ("RegionRevenueNorth12"), so neither a
// search for "North" nor a model reading the chunk could tell a figure's
// row. A layout table and a table inside a cell keep their cells apart as
// blocks.
func TestRead_HTMLTablesKeepTheirCellsApart(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"<table><tr><th>Region</th><th>Revenue</th></tr><tr><td>North</td><td>12</td></tr></table>",
			"| Region | Revenue |\n|---|---|\n| North | 12 |"},
		{"<table><tr><td>North</td><td>a|b</td></tr><tr><td>South</td><td>7</td></tr></table>", "| North | a\\|b |\n| South | 7 |"},
		{`<table role="presentation"><tr><td>left column</td><td>right column</td></tr></table>`, "left column\n\nright column"},
		{"<table><tr><td>outer<table><tr><td>inner one</td><td>inner two</td></tr></table></td><td>last</td></tr></table>", "| last |"},
	}
	for _, tt := range tests {
		out, err := Read(HTML, []byte(tt.in))
		if err != nil || !strings.Contains(out, tt.want) {
			t.Errorf("%s:\n%q (%v), want it to hold %q", tt.in, out, err, tt.want)
		}
	}
	out, _ := Read(HTML, []byte(tests[3].in))
	for _, w := range []string{"outer", "inner one", "inner two"} {
		if !strings.Contains(out, w) || strings.Contains(out, "innerone") {
			t.Errorf("nested table: %q lacks %q", out, w)
		}
	}
}

// The table plugin fills the cells a span covers and pads every row to the
// widest: a rowspan=65534 colspan=1000 cell (61 bytes) rendered to 196 MB
// in a minute and a half, one wide row over thousands of one-cell rows
// (145 KB) to 75 MB. Spans are dropped and a ragged table becomes blocks;
// the text stays.
func TestRead_HTMLTableAmplificationBounded(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"<table><tr><td rowspan=65534 colspan=1000>spanned</td><td>next</td></tr></table>",
		"<table><tr>" + strings.Repeat("<td>h</td>", 5000) + "</tr>" + strings.Repeat("<tr><td>a</td></tr>", 5000) + "</table>",
	} {
		out, err := Read(HTML, []byte(in))
		if err != nil || len(out) > 2*len(in) {
			t.Fatalf("%d bytes of HTML rendered to %d bytes (%v)", len(in), len(out), err)
		}
		if strings.Count(out, "a")+strings.Count(out, "h") < 10000 && !strings.Contains(out, "| spanned | next |") {
			t.Fatalf("text lost: %q", out[:min(len(out), 200)])
		}
	}
}
