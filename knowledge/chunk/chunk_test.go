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
	f.Add("# a\n<!--\n# b\n\n-->\n<pre>\n# c\n</PRE>\n<!x\n# d\n", 9, 0)
	f.Add("---\na: 1\n# c\n---\nTitle\nmore\n===\nx\n- i\n---\n> q\n1) y\n", 7, 0)
	f.Add("# "+strings.Repeat("h", 80)+"\n## sub\n"+strings.Repeat("body words. ", 20), 9, 0)
	f.Fuzz(func(t *testing.T, text string, size, overlap int) {
		size = size%50 + 1
		if size < 1 {
			size = 1
		}
		overlap = (overlap%size + size) % size
		if utf8.ValidString(text) { // no text lost or repeated without overlap
			squeeze := func(s string) string { return strings.Join(strings.Fields(s), "") }
			for _, c := range []Chunker{Fixed{Size: size}, Recursive{Size: size}} {
				if got, want := squeeze(strings.Join(c.Chunk(text), "")), squeeze(text); got != want {
					t.Fatalf("%s: chunks hold %q, the text %q", c.Name(), got, want)
				}
			}
			// Markdown adds the headings to its chunks and an overlap
			// repeats text: the text is in them, in order, among those
			for _, c := range []Chunker{Markdown{Size: size}, Fixed{Size: size, Overlap: overlap}} {
				if got, want := squeeze(strings.Join(c.Chunk(text), "")), squeeze(text); !subsequence(want, got) {
					t.Fatalf("%s: chunks hold %q, not all of the text %q in order", c.Name(), got, want)
				}
			}
		}
		for _, c := range []Chunker{Fixed{Size: size, Overlap: overlap}, Recursive{Size: size}, Markdown{Size: size}} {
			for _, piece := range c.Chunk(text) {
				if strings.TrimSpace(piece) == "" {
					t.Fatalf("%s produced a blank chunk", c.Name())
				}
				if utf8.RuneCountInString(piece) > size {
					t.Fatalf("%s chunk of %d runes > %d", c.Name(), utf8.RuneCountInString(piece), size)
				}
			}
		}
	})
}

// A chunk boundary never falls inside a character as the reader sees it:
// a combining accent, an emoji's skin tone or a ZWJ sequence stays with
// its base, nor between the two halves of a flag (before, a chunk could
// start with a lone U+0301 or 🏽, or a flag's second letter).
func TestFixed_DoesNotSplitCombiningSequences(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text          string
		size, overlap int
		want          []string
	}{
		{"abe\u0301cd", 3, 0, []string{"ab", "e\u0301c", "d"}},
		{"io👍🏽x", 3, 0, []string{"io", "👍🏽x"}},
		{"a👩\u200d💻bc", 3, 0, []string{"a", "👩\u200d💻", "bc"}},
		{"ae\u0301bcdefg", 4, 2, []string{"ae\u0301b", "e\u0301bc", "bcde", "defg"}},
		// a flag is a pair of regional indicators: 🇫🇷 cut in two read
		// as the letters F and R
		{"ab🇫🇷🇩🇪", 3, 0, []string{"ab", "🇫🇷", "🇩🇪"}},
		{"a🇫🇷🇩🇪b", 4, 0, []string{"a🇫🇷", "🇩🇪b"}},
		{"🇫🇷🇩🇪🇮🇹", 5, 2, []string{"🇫🇷🇩🇪", "🇩🇪🇮🇹"}},
	}
	for _, c := range cases {
		got := Fixed{Size: c.size, Overlap: c.overlap}.Chunk(c.text)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("Fixed{%d, %d}.Chunk(%q) = %q, want %q", c.size, c.overlap, c.text, got, c.want)
		}
	}
	// a sequence longer than the size is cut all the same
	if got := (Fixed{Size: 2}).Chunk("e\u0301\u0301\u0301"); len(got) != 2 {
		t.Errorf("a long sequence: %q", got)
	}
}

// Markdown chunks stay within Size when the size leaves no room beside the
// heading (size 1 gave 1,000-rune chunks), and every piece of a long
// section carries its headings, also one starting with "#" (a comment in a
// code block lost them).
func TestMarkdown_SmallSizesAndHashPieces(t *testing.T) {
	t.Parallel()
	md := "# Title\n" + strings.Repeat("word ", 50)
	for _, c := range (Markdown{Size: 1}).Chunk(md) {
		if n := utf8.RuneCountInString(c); n > len("Title\n")+1 {
			t.Fatalf("size 1 gave a chunk of %d runes: %q", n, c)
		}
	}
	code := "# Setup\n```sh\n" + strings.Repeat("# step\necho hi\n", 10) + "```\n"
	got := Markdown{Size: 40}.Chunk(code)
	if len(got) < 3 {
		t.Fatalf("want several chunks, got %q", got)
	}
	for i, c := range got[1:] {
		if !strings.HasPrefix(c, "Setup\n") {
			t.Errorf("chunk %d lost its heading: %q", i+1, c)
		}
	}
}

// subsequence reports whether s's runes appear in t in order.
func subsequence(s, t string) bool {
	for _, r := range s {
		i := strings.IndexRune(t, r)
		if i < 0 {
			return false
		}
		t = t[i+utf8.RuneLen(r):]
	}
	return true
}

// A heading line longer than the chunk size is cut in the chunks it
// prefixes (to half of Size): a 100,000-character heading went into every
// chunk of its section, so 1.1 MB of Markdown made 228 MB of chunks to
// embed. The heading itself stays, in the section's first pieces.
func TestMarkdown_LongHeadingBounded(t *testing.T) {
	t.Parallel()
	text := "# " + strings.Repeat("h", 100_000) + "\n" + strings.Repeat("body words here. ", 60_000)
	total := 0
	var hs int
	for _, c := range (Markdown{}).Chunk(text) {
		if n := utf8.RuneCountInString(c); n > DefaultSize {
			t.Fatalf("a chunk of %d runes", n)
		}
		total += len(c)
		hs += strings.Count(c, "h")
	}
	if total > 3*len(text) || hs < 100_000 {
		t.Fatalf("%d bytes of chunks from %d, %d of the heading's 100,000 h", total, len(text), hs)
	}
}

// Windows line endings: "\r\n\r\n" holds no "\n\n", so the recursive
// chunker (and the Markdown one's sections, which it splits) did not see
// the paragraphs of a CRLF file and packed its lines across them (a chunk
// ending inside a paragraph and starting the next), where the same text
// with "\n" endings splits between paragraphs. CRLF is read as "\n".
func TestRecursive_CRLFParagraphsSplitAsLF(t *testing.T) {
	t.Parallel()
	lf := "Short intro.\n\nSecond para one.\nSecond para two.\n\nThird."
	crlf := strings.ReplaceAll(lf, "\n", "\r\n")
	for _, c := range []Chunker{Recursive{Size: 30}, Markdown{Size: 30}, Recursive{Size: 45}} {
		want, got := c.Chunk(lf), c.Chunk(crlf)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("%s: CRLF text gave %q, LF text %q", c.Name(), got, want)
		}
	}
}

// Fixed ends a chunk at white space when the chunk holds some, as Agno's
// FixedSizeChunking does, and an overlap starts at a word: a word cut in
// two ("worl" and "d") was in neither chunk for a keyword search to find.
// A word longer than the size is still cut.
func TestFixed_DoesNotSplitWords(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text          string
		size, overlap int
		want          []string
	}{
		{"hello world foo bar", 10, 0, []string{"hello", "world foo", "bar"}},
		{"hello\tworld\nfoo bar", 10, 0, []string{"hello", "world\nfoo", "bar"}},
		{"alpha beta gamma delta", 12, 6, []string{"alpha beta", "beta gamma", "gamma delta"}},
		{"abcdefghij klm", 4, 0, []string{"abcd", "efgh", "ij", "klm"}},
		{"naïve café olé", 6, 0, []string{"naïve", "café", "olé"}},
		{"ab 10\u00a0km", 7, 0, []string{"ab", "10\u00a0km"}},
	}
	for _, c := range cases {
		got := Fixed{Size: c.size, Overlap: c.overlap}.Chunk(c.text)
		if strings.Join(got, "|") != strings.Join(c.want, "|") {
			t.Errorf("Fixed{%d, %d}.Chunk(%q) = %q, want %q", c.size, c.overlap, c.text, got, c.want)
		}
	}
}
