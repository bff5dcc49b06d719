package chunk

import (
	"strings"
	"testing"
)

// Only a real heading starts a section: a "# comment" in an indented code
// block (four spaces or a tab) or in a fence closed only by its own kind
// of marker ("~~~" does not close "```") is code, not a heading (it split
// the section and replaced its heading path).
func TestMarkdown_CodeIsNotAHeading(t *testing.T) {
	t.Parallel()
	cases := []string{
		"# Install\n\nRun:\n\n    # fetch the modules\n    go mod download\n",
		"# Install\n\nRun:\n\n\t# fetch the modules\n\tgo mod download\n",
		"# Install\n\n```sh\n~~~\n# fetch the modules\ngo mod download\n```\n",
		"# Install\n\n````md\n```\n# fetch the modules\n```\n````\n",
	}
	for _, md := range cases {
		got := Markdown{Size: 1000}.Chunk(md)
		if len(got) != 1 || !strings.HasPrefix(got[0], "# Install") || !strings.Contains(got[0], "# fetch the modules") {
			t.Errorf("Chunk(%q) = %q, want the one section under Install", md, got)
		}
	}
	// up to three spaces still make a heading, and a fence still hides one
	got := Markdown{Size: 1000}.Chunk("# A\na\n   ## B\nb\n```\n# C\n```\n")
	if len(got) != 2 || !strings.HasPrefix(got[1], "## B") || !strings.Contains(got[1], "# C") {
		t.Errorf("got %q", got)
	}
}
