package chunk

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestFixed_SizeAndOverlap(t *testing.T) {
	t.Parallel()
	got := Fixed{Size: 4, Overlap: 2}.Chunk("abcdefghij")
	want := []string{"abcd", "cdef", "efgh", "ghij"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestRecursive_PrefersParagraphsThenSentences(t *testing.T) {
	t.Parallel()
	text := "First paragraph here.\n\nSecond one. It has two sentences that are fairly long indeed."
	got := Recursive{Size: 40}.Chunk(text)
	if got[0] != "First paragraph here." {
		t.Fatalf("first chunk %q", got[0])
	}
	for _, c := range got {
		if utf8.RuneCountInString(c) > 40 {
			t.Fatalf("chunk over size: %q", c)
		}
	}
	if len(got) != 4 || got[1] != "Second one." || got[3] != "long indeed." {
		t.Fatalf("got %q", got)
	}
}

func TestMarkdown_ChunksCarryTheirHeadings(t *testing.T) {
	t.Parallel()
	md := "# Guide\nintro text\n## Install\nrun make\n```\n# not a heading\n```\n## Use\ncall it\n"
	got := Markdown{Size: 200}.Chunk(md)
	if len(got) != 3 {
		t.Fatalf("got %d chunks: %q", len(got), got)
	}
	if !strings.Contains(got[1], "# not a heading") || !strings.HasPrefix(got[1], "## Install") {
		t.Fatalf("fenced code split or heading lost: %q", got[1])
	}
}

func TestByName(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"FixedSizeChunker", "recursive", "MarkdownChunker", ""} {
		if _, err := ByName(n, 100, 0); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
	}
	if _, err := ByName("semantic", 0, 0); err == nil {
		t.Fatal("unknown chunker accepted")
	}
	if _, err := ByName("fixed", 10, 10); err == nil {
		t.Fatal("overlap ≥ size accepted")
	}
	// a size left to the default still bounds the overlap: an overlap of
	// the default size or more would step one rune per chunk
	for _, overlap := range []int{DefaultSize, DefaultSize + 500} {
		if _, err := ByName("fixed", 0, overlap); err == nil {
			t.Fatalf("overlap %d with the default size %d accepted", overlap, DefaultSize)
		}
	}
	if _, err := ByName("fixed", 0, DefaultSize-1); err != nil {
		t.Fatalf("overlap below the default size refused: %v", err)
	}
	if _, err := ByName("recursive", 10, 2); err == nil {
		t.Fatal("overlap accepted by a chunker that ignores it")
	}
}

func FuzzChunkers(f *testing.F) {
	f.Add("# a\nb\n\nc. d", 5, 2)
	f.Add("", 1, 0)
	f.Add("\xff\xfe ## x", 3, 1)
	f.Fuzz(func(t *testing.T, text string, size, overlap int) {
		size = size%50 + 1
		if size < 1 {
			size = 1
		}
		overlap = (overlap%size + size) % size
		for _, c := range []Chunker{Fixed{Size: size, Overlap: overlap}, Recursive{Size: size}, Markdown{Size: size}} {
			for _, piece := range c.Chunk(text) {
				if strings.TrimSpace(piece) == "" {
					t.Fatalf("%s produced a blank chunk", c.Name())
				}
				if _, ok := c.(Markdown); !ok && utf8.RuneCountInString(piece) > size {
					t.Fatalf("%s chunk of %d runes > %d", c.Name(), utf8.RuneCountInString(piece), size)
				}
			}
		}
	})
}
