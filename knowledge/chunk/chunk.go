// Package chunk splits document text into the pieces a knowledge base
// embeds: fixed size with overlap, recursive (paragraph, line, sentence,
// word), and Markdown-aware (sections under their headings). Sizes count
// characters (runes).
package chunk

import (
	"cmp"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chunker splits text into chunks; empty and blank pieces are dropped.
type Chunker interface {
	Chunk(text string) []string
	// Name is the strategy's name as /knowledge/config lists it.
	Name() string
}

// DefaultSize is the chunk size when a chunker's Size is zero.
const DefaultSize = 1000

// Fixed cuts text every Size runes, each chunk starting Overlap runes
// before the previous one ended.
type Fixed struct{ Size, Overlap int }

// Name implements Chunker.
func (Fixed) Name() string { return "FixedSizeChunker" }

// Chunk implements Chunker.
func (f Fixed) Chunk(text string) []string {
	size := f.Size
	if size <= 0 {
		size = DefaultSize
	}
	overlap := min(max(f.Overlap, 0), size-1)
	r := []rune(text)
	flags := flagHalves(r)
	var out []string
	for start := 0; start < len(r); {
		end := min(start+size, len(r))
		if b := boundaryBefore(r, flags, end, start); b > start {
			end = b
		} // else one sequence longer than size: cut inside it
		if s := strings.TrimSpace(string(r[start:end])); s != "" {
			out = append(out, s)
		}
		if end == len(r) {
			break
		}
		next := boundaryBefore(r, flags, end-overlap, start)
		if next <= start {
			next = end
		}
		start = next
	}
	return out
}

// zwj joins emoji into one (👩‍💻).
const zwj = '\u200d'

// boundaryBefore returns the last index in (floor, i] where a cut does not
// split a character from what extends it (a combining mark, a variation
// selector, an emoji modifier or tag, either side of a ZWJ) nor a flag in
// two (flags from flagHalves), or floor if there is none. It approximates
// Unicode's grapheme clusters in the cases text meets most; a cut inside
// one makes a chunk start with a lone accent, skin tone or flag letter.
func boundaryBefore(r []rune, flags []bool, i, floor int) int {
	for ; i > floor; i-- {
		if i >= len(r) || !extends(r[i]) && r[i-1] != zwj && (flags == nil || !flags[i]) {
			return i
		}
	}
	return floor
}

// flagHalves marks the second regional indicator of each pair (a flag,
// 🇫🇷), counted from the start of each run of them; nil when r has no
// pair. Computed once: counting back through a run at every cut would be
// quadratic in a long run of flags.
func flagHalves(r []rune) []bool {
	var second []bool
	run := 0
	for i, c := range r {
		if c < 0x1F1E6 || c > 0x1F1FF {
			run = 0
			continue
		}
		if run%2 == 1 {
			if second == nil {
				second = make([]bool, len(r))
			}
			second[i] = true
		}
		run++
	}
	return second
}

func extends(c rune) bool {
	return c == zwj || c >= 0xFE00 && c <= 0xFE0F || c >= 0x1F3FB && c <= 0x1F3FF || c >= 0xE0020 && c <= 0xE007F ||
		unicode.In(c, unicode.Mn, unicode.Me, unicode.Mc)
}

// Recursive splits on paragraphs, then lines, then sentences, then words,
// and packs adjacent pieces into chunks of at most Size runes; a word longer
// than Size is cut.
type Recursive struct{ Size int }

// Name implements Chunker.
func (Recursive) Name() string { return "RecursiveChunker" }

var separators = []string{"\n\n", "\n", ". ", "? ", "! ", "; ", ", ", " "}

// Chunk implements Chunker.
func (c Recursive) Chunk(text string) []string {
	size := c.Size
	if size <= 0 {
		size = DefaultSize
	}
	var out []string
	for _, s := range split(text, size, separators) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func split(text string, size int, seps []string) []string {
	if utf8.RuneCountInString(text) <= size {
		return []string{text}
	}
	for i, sep := range seps {
		if !strings.Contains(text, sep) {
			continue
		}
		parts := strings.SplitAfter(text, sep)
		var out []string
		var cur strings.Builder
		curLen := 0
		flush := func() {
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
				curLen = 0
			}
		}
		for _, p := range parts {
			pl := utf8.RuneCountInString(p)
			if pl > size {
				flush()
				out = append(out, split(p, size, seps[i+1:])...)
				continue
			}
			if curLen+pl > size {
				flush()
			}
			cur.WriteString(p)
			curLen += pl
		}
		flush()
		return out
	}
	return Fixed{Size: size}.Chunk(text)
}

// Markdown keeps sections together: it splits before each heading, prefixes
// every chunk with the headings it sits under (cut to half of Size), and
// splits a section longer than Size recursively; a chunk holds at most Size
// runes.
type Markdown struct{ Size int }

// Name implements Chunker.
func (Markdown) Name() string { return "MarkdownChunker" }

// Chunk implements Chunker.
func (m Markdown) Chunk(text string) []string {
	size := m.Size
	if size <= 0 {
		size = DefaultSize
	}
	var out []string
	var path []string // heading path: path[level-1]
	var body strings.Builder
	emit := func() {
		b := strings.TrimSpace(body.String())
		body.Reset()
		if b == "" {
			return
		}
		// the headings take at most half a chunk: a heading line of
		// 100,000 characters went into every chunk of its section (a
		// megabyte of Markdown made 228 MB of chunks)
		head := clipRunes(strings.Join(nonEmpty(path), " > "), (size-1)/2)
		budget := size
		if head != "" {
			// at least 1: a zero Size is Recursive's default of 1,000
			budget = max(size-utf8.RuneCountInString(head)-1, size/2, 1)
		}
		for i, piece := range (Recursive{Size: budget}).Chunk(b) {
			// the section's first piece starts with its own heading line;
			// every other piece gets the headings, also one starting with
			// "#" (a comment in a code block)
			if head != "" && (i > 0 || headingLevel(piece) == 0) {
				piece = head + "\n" + piece
			}
			out = append(out, piece)
		}
	}
	var fence string // the open fence's marker ("```", "~~~~", …); "" outside one
	for _, line := range strings.SplitAfter(text, "\n") {
		t := strings.TrimSpace(line)
		// CommonMark: headings and fences are indented at most three
		// spaces (more, or a tab, is an indented code block), and only a
		// marker of the opening one's kind, as long or longer, closes a fence
		indented := len(line)-len(strings.TrimLeft(line, " ")) > 3 || strings.HasPrefix(strings.TrimLeft(line, " "), "\t")
		if m := fenceMarker(t); m != "" && !indented {
			switch {
			case fence == "":
				fence = m
			case m[0] == fence[0] && len(m) >= len(fence) && strings.TrimSpace(t[len(m):]) == "":
				fence = ""
			}
		}
		inFence := fence != ""
		if lvl := headingLevel(t); lvl > 0 && !inFence && !indented {
			emit()
			for len(path) < lvl {
				path = append(path, "")
			}
			// kept cut to one rune over what clipRunes leaves of the
			// prefix: the prefix is the same, and a long heading is not
			// joined and counted again for each section under it (a
			// 200,000-character one over 20,000 sections copied 4 GB)
			path = append(path[:lvl-1], firstRunes(strings.TrimSpace(t[lvl:]), (size-1)/2+1))
		}
		body.WriteString(line)
	}
	emit()
	return out
}

// clipRunes cuts s to at most n runes, the last an ellipsis when cut ("" when
// n < 2).
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n < 2 {
		return ""
	}
	i := 0
	for range n - 1 {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return strings.TrimSpace(s[:i]) + "…"
}

// firstRunes returns s's first n runes (all of s when it has fewer).
func firstRunes(s string, n int) string {
	i := 0
	for ; n > 0 && i < len(s); n-- {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	return s[:i]
}

// fenceMarker returns the run of three or more backticks or tildes line
// starts with, or "".
func fenceMarker(line string) string {
	if !strings.HasPrefix(line, "```") && !strings.HasPrefix(line, "~~~") {
		return ""
	}
	n := 0
	for n < len(line) && line[n] == line[0] {
		n++
	}
	return line[:n]
}

func headingLevel(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(line) || line[n] != ' ' {
		return 0
	}
	return n
}

func nonEmpty(xs []string) []string {
	var out []string
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// ByName returns a chunker by the name /knowledge/config lists (or a short
// form: fixed, recursive, markdown); size and overlap zero take defaults.
func ByName(name string, size, overlap int) (Chunker, error) {
	if size < 0 || overlap < 0 {
		return nil, fmt.Errorf("chunk: size %d and overlap %d: need size > overlap ≥ 0", size, overlap)
	}
	if eff := cmp.Or(size, DefaultSize); overlap >= eff {
		return nil, fmt.Errorf("chunk: size %d (0 is the default, %d) and overlap %d: need size > overlap ≥ 0", size, DefaultSize, overlap)
	}
	switch strings.ToLower(name) {
	case "fixed", "fixedsizechunker", "fixed_size", "fixedsize":
		return Fixed{Size: size, Overlap: overlap}, nil
	case "", "recursive", "recursivechunker":
		if overlap > 0 {
			return nil, fmt.Errorf("chunk: the recursive chunker takes no overlap; use the fixed chunker for overlap")
		}
		return Recursive{Size: size}, nil
	case "markdown", "markdownchunker":
		if overlap > 0 {
			return nil, fmt.Errorf("chunk: the markdown chunker takes no overlap; use the fixed chunker for overlap")
		}
		return Markdown{Size: size}, nil
	}
	return nil, fmt.Errorf("chunk: unknown chunker %q: use FixedSizeChunker, RecursiveChunker or MarkdownChunker", name)
}

// Names lists the chunkers ByName knows, as /knowledge/config shows them.
func Names() []Chunker { return []Chunker{Fixed{}, Recursive{}, Markdown{}} }
