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
		out, err := readWithin(t, HTML, []byte(in))
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
