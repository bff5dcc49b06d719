package chunk

import (
	"runtime"
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

// The headings a chunk is prefixed with cost time by the chunk size, not
// by the heading's length: a 200,000-character heading over 20,000 short
// sections was joined and counted again for each of them (4 GB copied
// for 300 KB of Markdown; a 50 MB upload would take hours). Not parallel:
// it reads the process's allocation counter.
func TestMarkdown_LongHeadingOverManySectionsIsLinear(t *testing.T) {
	text := "# " + strings.Repeat("h", 200_000) + "\n" + strings.Repeat("## x\nbody\n", 20_000)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := Markdown{}.Chunk(text)
	runtime.ReadMemStats(&after)
	if len(got) < 20_000 {
		t.Fatalf("%d chunks, want one per section at least", len(got))
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Fatalf("chunking %d bytes allocated %d MB", len(text), n>>20)
	}
	// the prefix is what the whole heading gave: cut to half a chunk
	small := Markdown{Size: 20}.Chunk("# " + strings.Repeat("h", 500) + "\n## x\n" + strings.Repeat("word ", 10))
	if c := small[len(small)-1]; !strings.HasPrefix(c, "hhhhhhhh…\nword") {
		t.Fatalf("last chunk %q", c)
	}
}
