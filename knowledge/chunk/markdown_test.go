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

// Setext headings (a paragraph underlined with = or -) start sections as
// ATX headings do: they were body text of the section before, so a
// document written in them was one section and its chunks carried no
// headings. A - line is an underline only right under a paragraph (after a
// blank line, a list item, a quote, code or a heading it is a thematic
// break), as CommonMark reads it.
func TestMarkdown_SetextHeadings(t *testing.T) {
	t.Parallel()
	got := Markdown{Size: 1000}.Chunk("Guide\n=====\nintro\n\nInstall\nnow\n-------\nrun make\n")
	if len(got) != 2 || got[0] != "Guide\n=====\nintro" || got[1] != "Install\nnow\n-------\nrun make" {
		t.Fatalf("got %q, want the Guide and Install sections", got)
	}
	// every further piece of a long section carries the path
	got = Markdown{Size: 40}.Chunk("Guide\n===\n\nInstall\n---\n" + strings.Repeat("word ", 30))
	if len(got) < 3 || !strings.HasPrefix(got[0], "Guide\n===") || !strings.HasPrefix(got[1], "Install\n---") {
		t.Fatalf("got %q", got)
	}
	for _, c := range got[2:] {
		if !strings.HasPrefix(c, "Guide > Install\nword") {
			t.Errorf("chunk %q lost its headings", c)
		}
	}
	for _, md := range []string{
		"# A\npara\n\n---\n\nmore\n",       // a thematic break after a blank line
		"# A\n- item\n---\nmore\n",         // after a list item
		"# A\n> quote\n---\nmore\n",        // after a quote
		"# A\n\n    code\n---\nmore\n",     // after indented code
		"# A\n```\ncode\n```\n---\nmore\n", // after a fence
		"# A\n```\ntext\n---\n```\nmore\n", // inside a fence
		"# A\npara\n    ===\nmore\n",       // indented four spaces: paragraph text
		"# A\npara\n= =\nmore\n",           // not one run of =
		"# A\npara\n--- x\nmore\n",         // not only -
		"# A\n## B\n---\nmore\n",           // under an ATX heading
		"# A\n\n===\nmore\n",               // = alone is paragraph text
		"# A\npara\n\t---\nmore\n",         // a tab is four spaces
	} {
		got := Markdown{Size: 1000}.Chunk(md)
		last := got[len(got)-1]
		if strings.HasPrefix(md, "# A\n## B") {
			last = got[0] + "\n" + last
		}
		if len(got) > 2 || !strings.HasPrefix(got[0], "# A") || !strings.HasSuffix(last, "more") {
			t.Errorf("Chunk(%q) = %q, want no setext heading", md, got)
		}
	}
}

// YAML front matter (--- to --- or ..., on the document's first line;
// also TOML's +++) is the document's metadata, not Markdown: its "# …"
// comments started sections (a comment became the heading of everything
// to the next heading), and its closing --- would be read as a setext
// underline making its last line a heading.
func TestMarkdown_FrontMatterIsNotHeadings(t *testing.T) {
	t.Parallel()
	for _, md := range []string{
		"---\ntitle: Notes\n# a YAML comment\ntags: [a]\n---\n# Doc\nbody\n",
		"\ufeff---\ntitle: Notes\n# a YAML comment\ntags: [a]\n...\n# Doc\nbody\n",
		"+++\ntitle = \"Notes\"\n# a TOML comment\n+++\n# Doc\nbody\n",
	} {
		got := Markdown{Size: 1000}.Chunk(md)
		if len(got) != 2 || !strings.Contains(got[0], "title") || !strings.Contains(got[0], "comment") || got[1] != "# Doc\nbody" {
			t.Errorf("Chunk(%q) = %q, want the front matter and the Doc section", md, got)
		}
	}
	got := Markdown{Size: 30}.Chunk("---\ntitle: Notes\n---\n\n" + strings.Repeat("word ", 20))
	for _, c := range got {
		if strings.HasPrefix(c, "title: Notes\nword") {
			t.Errorf("the front matter's last line became a heading: %q", got)
		}
	}
	// not closed: not front matter; not on the first line: Markdown
	if got := (Markdown{Size: 1000}).Chunk("---\n# A\nx\n"); len(got) != 2 || got[1] != "# A\nx" {
		t.Errorf("unclosed front matter: %q", got)
	}
	if got := (Markdown{Size: 1000}).Chunk("intro\n\n---\n# A\n---\nx\n"); len(got) != 2 || got[1] != "# A\n---\nx" {
		t.Errorf("a --- block later in the document: %q", got)
	}
}

// ATX headings as CommonMark reads them: a closing run of # is not part of
// the title ("## Install ##" put "Install ##" into every chunk's heading
// path), a tab may follow the opening #s ("##\tInstall" was body text),
// and "#" alone is an empty heading.
func TestMarkdown_ATXHeadingClosingSequenceAndTab(t *testing.T) {
	t.Parallel()
	got := Markdown{Size: 40}.Chunk("# Guide #\n##\tInstall ##\n" + strings.Repeat("word ", 20))
	if len(got) < 3 || got[0] != "# Guide #" || !strings.HasPrefix(got[1], "##\tInstall ##") {
		t.Fatalf("got %q", got)
	}
	for _, c := range got[2:] {
		if !strings.HasPrefix(c, "Guide > Install\nword") {
			t.Errorf("chunk %q: want the path Guide > Install", c)
		}
	}
	for md, head := range map[string]string{
		"# C# tips\n":       "C# tips",
		"# a \\#\n":         "a \\#",
		"# ###\n":           "",
		"# 5 #hashtag ##\n": "5 #hashtag",
	} {
		got := Markdown{Size: 30}.Chunk(md + "## x\n" + strings.Repeat("word ", 12))
		want := strings.TrimPrefix(head+" > x\nword", " > ")
		if c := got[len(got)-1]; !strings.HasPrefix(c, want) {
			t.Errorf("%q: last chunk %q, want it under %q", md, c, want)
		}
	}
	// "#" alone ends the section before it
	if got := (Markdown{Size: 1000}).Chunk("# A\na\n#\nb\n"); len(got) != 2 || got[1] != "#\nb" {
		t.Errorf("got %q", got)
	}
}

// An HTML block that runs to its end marker (a comment, <script>, <style>,
// <pre>, <textarea>, a processing instruction, a declaration, CDATA) is
// HTML, blank lines and all: a "# …" line in it (commented-out Markdown, a
// shell comment in <pre>, a CSS id selector) started a section, as a
// fence's did before.
func TestMarkdown_HTMLBlocksAreNotHeadings(t *testing.T) {
	t.Parallel()
	for _, md := range []string{
		"# A\n<!--\n# old heading\n\nx\n-->\nmore\n",
		"# A\n<pre>\n# make install\n\n</pre>\nmore\n",
		"# A\n  <STYLE>\n#main { color: red }\n</style>\nmore\n",
		"# A\n<script type=\"text/x-sh\">\n# setup\n</script>\nmore\n",
		"# A\n<?php\n# comment\n?>\nmore\n",
		"# A\n<![CDATA[\n# data\n]]>\nmore\n",
		"# A\npara\n<!--\nTitle\n---\n-->\nmore\n", // nor a setext heading
	} {
		if got := (Markdown{Size: 1000}).Chunk(md); len(got) != 1 || !strings.HasSuffix(got[0], "more") {
			t.Errorf("Chunk(%q) = %q, want the one section under A", md, got)
		}
	}
	// a block ends at its marker, also on its first line
	for _, md := range []string{"# A\n<!-- note -->\n# B\nb\n", "# A\n<!--\nnote\n-->\n# B\nb\n", "# A\n<pre>x</pre>\n# B\nb\n", "# A\n<prefix>\n# B\nb\n", "# A\n<!DOCTYPE html>\n# B\nb\n"} {
		if got := (Markdown{Size: 1000}).Chunk(md); len(got) != 2 || got[1] != "# B\nb" {
			t.Errorf("Chunk(%q) = %q, want A and B", md, got)
		}
	}
}

// A line starting with ``` that holds another backtick is inline code,
// not a fence (CommonMark: a backtick fence's info string has none): it
// opened a fence that hid every heading after it up to the next ``` line.
func TestMarkdown_InlineCodeIsNotAFence(t *testing.T) {
	t.Parallel()
	got := Markdown{Size: 1000}.Chunk("# A\n```x``` is inline code\n# B\nb\n```\ncode\n```\n")
	if len(got) != 2 || !strings.HasPrefix(got[1], "# B") {
		t.Errorf("got %q, want A and B", got)
	}
	// a tilde fence's info string may hold backticks
	got = Markdown{Size: 1000}.Chunk("# A\n~~~ `x`\n# not a heading\n~~~\n")
	if len(got) != 1 {
		t.Errorf("got %q, want one section", got)
	}
}
