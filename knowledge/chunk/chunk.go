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

// Fixed cuts text into chunks of at most Size runes, each ending before
// the last white space in it (as Agno's FixedSizeChunking: a word cut in
// two, "worl" and "d", was in neither chunk for a search to find) and
// starting Overlap runes before the previous one ended, at the first word
// there. A chunk holding no white space (a word longer than Size, text
// without spaces) is cut at Size, or at its overlap, all the same.
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
		if w := spaceBefore(r, flags, end, start); w > start {
			end = w
		} else if b := boundaryBefore(r, flags, end, start); b > start {
			end = b
		} // else one sequence longer than size: cut inside it
		if s := strings.TrimSpace(string(r[start:end])); s != "" {
			out = append(out, s)
		}
		if end == len(r) {
			break
		}
		next := wordAfter(r, end-overlap, end)
		if next <= start || next >= end {
			next = boundaryBefore(r, flags, end-overlap, start)
		}
		if next <= start {
			next = end
		}
		start = next
	}
	return out
}

// spaceBefore returns the last index in (floor, i] of white space a cut
// may fall before (i itself when i is the text's end), or floor if there
// is none.
func spaceBefore(r []rune, flags []bool, i, floor int) int {
	if i >= len(r) {
		return i
	}
	for ; i > floor; i-- {
		if breaks(r[i]) && boundaryBefore(r, flags, i, floor) == i {
			return i
		}
	}
	return floor
}

// wordAfter returns the first index in [i, end) where a word starts (white
// space before it, none at it), or end if there is none.
func wordAfter(r []rune, i, end int) int {
	for i = max(i, 1); i < end; i++ {
		if breaks(r[i-1]) && !unicode.IsSpace(r[i]) {
			return i
		}
	}
	return end
}

// breaks reports white space between words; a no-break space ("10 km")
// keeps its words together.
func breaks(c rune) bool {
	return unicode.IsSpace(c) && c != '\u00a0' && c != '\u2007' && c != '\u202f'
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
// than Size is cut. A "\r\n" line ending is read as "\n".
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
	// "\r\n\r\n" holds no "\n\n": without this a CRLF text's paragraphs
	// went unseen and its lines were packed across them
	text = strings.ReplaceAll(text, "\r\n", "\n")
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

// Markdown keeps sections together: it splits before each heading (ATX,
// "## Title", and setext, a paragraph underlined with = or -), prefixes
// every chunk with the headings it sits under (cut to half of Size), and
// splits a section longer than Size recursively; a chunk holds at most Size
// runes. Front matter (YAML between --- lines, TOML between +++ lines, from
// the document's first line) is text of the first section, never headings.
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
	headed := false   // the section starts with its heading's text
	emit := func(b string) {
		b = strings.TrimSpace(b)
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
			// the section's first piece starts with its own heading;
			// every other piece gets the headings, also one starting with
			// "#" (a comment in a code block)
			if head != "" && (i > 0 || !headed) {
				piece = head + "\n" + piece
			}
			out = append(out, piece)
		}
	}
	// open emits the text before a heading and puts the heading at its
	// level in the path.
	open := func(before string, lvl int, title string) {
		emit(before)
		headed = true
		for len(path) < lvl {
			path = append(path, "")
		}
		// kept cut to one rune over what clipRunes leaves of the
		// prefix: the prefix is the same, and a long heading is not
		// joined and counted again for each section under it (a
		// 200,000-character one over 20,000 sections copied 4 GB)
		path = append(path[:lvl-1], firstRunes(title, (size-1)/2+1))
	}
	lines := strings.SplitAfter(text, "\n")
	var body strings.Builder
	n := frontMatter(lines)
	for _, line := range lines[:n] {
		body.WriteString(line)
	}
	var fence string  // the open fence's marker ("```", "~~~~", …); "" outside one
	var html []string // the end markers of the open HTML block; nil outside one
	para := -1        // where in body the open paragraph (a setext heading's text) starts; -1: none open
	inBlock := false  // in a list item or block quote: no paragraph of its own until a blank line
	for _, line := range lines[n:] {
		t := strings.TrimSpace(line)
		// CommonMark: headings and fences are indented at most three
		// spaces (more, or a tab, is an indented code block), and only a
		// marker of the opening one's kind, as long or longer, closes a fence
		lead := strings.TrimLeft(line, " ")
		indented := len(line)-len(lead) > 3 || strings.HasPrefix(lead, "\t")
		// an HTML block of CommonMark's kinds 1 to 5 is HTML to its end
		// marker, blank lines and all
		inHTML := html != nil
		if inHTML {
			if containsAny(line, html) {
				html = nil
			}
		} else if fence == "" && !indented {
			if ends, n := htmlBlockStart(lead); ends != nil {
				inHTML = true
				if !containsAny(lead[n:], ends) {
					html = ends
				}
			}
		}
		marker := ""
		if !indented && !inHTML {
			marker = fenceMarker(t)
		}
		if marker != "" {
			switch {
			case fence == "":
				fence = marker
			case marker[0] == fence[0] && len(marker) >= len(fence) && strings.TrimSpace(t[len(marker):]) == "":
				fence = ""
			}
		}
		lvl := 0
		if !indented {
			lvl = headingLevel(t)
		}
		switch {
		case fence != "" || marker != "" || inHTML: // in a fence (or its closing line) or HTML
			para = -1
		case lvl > 0:
			before := body.String()
			body.Reset()
			open(before, lvl, atxTitle(t[lvl:]))
			para = -1
		case t == "":
			para, inBlock = -1, false
		case para >= 0 && !indented && setextLevel(t) > 0:
			// the paragraph above was the heading's text: the section
			// starts with it
			before := body.String()
			body.Reset()
			open(before[:para], setextLevel(t), strings.Join(strings.Fields(before[para:]), " "))
			body.WriteString(before[para:])
			para = -1
		case indented:
			// code, or a paragraph's continuation line
		case thematicBreak(t):
			para = -1
		case strings.HasPrefix(lead, ">") || listItem(lead, para >= 0):
			para, inBlock = -1, true
		case para < 0 && !inBlock:
			para = body.Len()
		}
		body.WriteString(line)
	}
	emit(body.String())
	return out
}

// frontMatter returns how many of a document's first lines (as
// strings.SplitAfter(text, "\n") cuts them) are its front matter: a line
// "---" (YAML, closed by "---" or "...") or "+++" (TOML, closed by "+++")
// first, after a byte order mark, through the closing line; 0 when there is
// none or it is not closed.
func frontMatter(lines []string) int {
	if len(lines) == 0 {
		return 0
	}
	first := strings.TrimRight(strings.TrimPrefix(lines[0], "\ufeff"), " \t\r\n")
	if first != "---" && first != "+++" {
		return 0
	}
	for i := 1; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t\r\n")
		if l == first || first == "---" && l == "..." {
			return i + 1
		}
	}
	return 0
}

// htmlEnds are the end markers of the HTML blocks htmlBlockStart knows, by
// their start (lower case; <script, <pre, <style and <textarea, CommonMark's
// kind 1, end at any of the four end tags).
var htmlEnds = []struct {
	start string
	ends  []string
	tag   bool // a tag's name: white space, ">" or the line's end follows
}{
	{"<!--", []string{"-->"}, false},
	{"<![cdata[", []string{"]]>"}, false},
	{"<?", []string{"?>"}, false},
	{"<script", kind1Ends, true}, {"<pre", kind1Ends, true}, {"<style", kind1Ends, true}, {"<textarea", kind1Ends, true},
	{"<!", []string{">"}, false}, // a declaration: <! and a letter
}

var kind1Ends = []string{"</script>", "</pre>", "</style>", "</textarea>"}

// htmlBlockStart returns the end markers of the HTML block lead (a line
// without its indentation) starts, and the length of its start; nil when
// it starts none of CommonMark's kinds 1 to 5 (those that run to an end
// marker rather than a blank line).
func htmlBlockStart(lead string) ([]string, int) {
	if !strings.HasPrefix(lead, "<") {
		return nil, 0
	}
	low := strings.ToLower(lead[:min(len(lead), 16)])
	for _, h := range htmlEnds {
		if !strings.HasPrefix(low, h.start) {
			continue
		}
		n := len(h.start)
		rest := strings.TrimRight(low[n:], "\r\n")
		switch {
		case h.start == "<!" && (rest == "" || rest[0] < 'a' || rest[0] > 'z'):
			continue
		case h.tag && rest != "" && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '>':
			continue // <prefix>, <scripts>: not these tags
		}
		return h.ends, n
	}
	return nil, 0
}

// containsAny reports whether s holds one of the (lower-case) markers,
// ignoring case.
func containsAny(s string, markers []string) bool {
	low := strings.ToLower(s)
	for _, m := range markers {
		if strings.Contains(low, m) {
			return true
		}
	}
	return false
}

// setextLevel returns 1 for a setext underline of =, 2 for one of -, and 0
// for another line (t is trimmed; its indentation is checked apart).
func setextLevel(t string) int {
	if t == "" || strings.Trim(t, t[:1]) != "" {
		return 0
	}
	switch t[0] {
	case '=':
		return 1
	case '-':
		return 2
	}
	return 0
}

// thematicBreak reports a thematic break: three or more of one of -, * and
// _, with only spaces and tabs between (t is trimmed).
func thematicBreak(t string) bool {
	if t == "" || !strings.ContainsRune("-*_", rune(t[0])) {
		return false
	}
	n := 0
	for i := 0; i < len(t); i++ {
		switch t[i] {
		case t[0]:
			n++
		case ' ', '\t':
		default:
			return false
		}
	}
	return n >= 3
}

// listItem reports a list item's first line (lead is the line without its
// indentation): a bullet (-, +, *) or a number of up to nine digits and .
// or ), then white space or the line's end. Under an open paragraph only a
// non-empty item numbered 1 or bulleted starts one (else the line is the
// paragraph's), as CommonMark reads it.
func listItem(lead string, inParagraph bool) bool {
	n := 0
	for n < len(lead) && n < 9 && lead[n] >= '0' && lead[n] <= '9' {
		n++
	}
	switch {
	case n == 0 && lead != "" && strings.ContainsRune("-+*", rune(lead[0])):
		n = 1
	case n > 0 && n < len(lead) && (lead[n] == '.' || lead[n] == ')'):
		if inParagraph && lead[:n] != "1" {
			return false
		}
		n++
	default:
		return false
	}
	rest := lead[n:]
	if r := strings.TrimSpace(rest); r == "" {
		return !inParagraph
	}
	return rest[0] == ' ' || rest[0] == '\t'
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
// starts with, or "". After backticks no other backtick may follow
// ("```x``` …" is inline code).
func fenceMarker(line string) string {
	if !strings.HasPrefix(line, "```") && !strings.HasPrefix(line, "~~~") {
		return ""
	}
	n := 0
	for n < len(line) && line[n] == line[0] {
		n++
	}
	if line[0] == '`' && strings.Contains(line[n:], "`") {
		return ""
	}
	return line[:n]
}

// headingLevel returns the level of an ATX heading line (trimmed): one to
// six #, then a space, a tab or the line's end; 0 for another line.
func headingLevel(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n < len(line) && line[n] != ' ' && line[n] != '\t' {
		return 0
	}
	return n
}

// atxTitle returns an ATX heading's title from what follows its opening #s:
// trimmed, without a closing run of # (one after a space or a tab, or the
// whole of it: "## Install ##" is Install, "# C#" is C#).
func atxTitle(rest string) string {
	s := strings.TrimSpace(rest)
	t := strings.TrimRight(s, "#")
	if t == "" {
		return ""
	}
	if t != s && (t[len(t)-1] == ' ' || t[len(t)-1] == '\t') {
		return strings.TrimSpace(t)
	}
	return s
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
