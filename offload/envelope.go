package offload

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// SystemPrompt is the system-message line that tells the model the envelope
// convention; the agent adds it when offloading is on.
const SystemPrompt = `Large tool results are stored outside the conversation and shown as <result id="res_..." tool="..." lines="N" size="...">preview</result>. ` +
	`The preview is incomplete: call read_result(result_id, start_line, end_line) to read a range, or search_result(result_id, pattern) to find lines, before relying on content you cannot see.`

// countLines counts lines as split by "\n" (a trailing newline does not
// start another line).
func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

func splitLines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// clipChars cuts s to at most n characters (never inside a UTF-8 sequence).
func clipChars(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

// envelope builds the text that replaces an offloaded result: the head
// (PreviewLines lines within PreviewChars), the count of omitted lines, the
// last lines, and how to read the rest.
func (o *Offloader) envelope(id, toolName, result string, lines int, stored bool) string {
	all := splitLines(result)
	var b strings.Builder
	fmt.Fprintf(&b, `<result id="%s" tool="%s" lines="%d" size="%s"`, id, attr(toolName), lines, HumanSize(int64(len(result))))
	if !stored {
		b.WriteString(` stored="false"`)
	}
	b.WriteString(">\n")
	budget := o.cfg.PreviewChars
	head := 0
	for head < len(all) && head < o.cfg.PreviewLines && budget > 0 {
		line := clipLine(all[head], budget)
		b.WriteString(line)
		b.WriteByte('\n')
		budget -= len([]rune(line)) + 1
		head++
	}
	tailStart := max(head, len(all)-tailLines)
	if omitted := tailStart - head; omitted > 0 {
		fmt.Fprintf(&b, "[... %d lines omitted ...]\n", omitted)
	}
	for _, line := range all[tailStart:] {
		b.WriteString(clipLine(line, max(o.cfg.PreviewChars/(2*tailLines), 40)))
		b.WriteByte('\n')
	}
	b.WriteString("</result>\n")
	if stored {
		fmt.Fprintf(&b, `Full result stored: read it with read_result(result_id="%s", start_line=1) or search it with search_result(result_id="%s", pattern="...").`, id, id)
	} else {
		b.WriteString("The full result could not be stored; only this preview exists. Ask the tool again with a narrower request if you need more.")
	}
	return b.String()
}

// clipLine cuts one line to n characters, saying how much it cut.
func clipLine(line string, n int) string {
	c := clipChars(line, n)
	if len(c) == len(line) {
		return c
	}
	return fmt.Sprintf("%s [... %d chars omitted ...]", c, utf8.RuneCountInString(line[len(c):]))
}

func attr(s string) string {
	return strings.NewReplacer(`&`, "&amp;", `"`, "&quot;", `<`, "&lt;", `>`, "&gt;").Replace(s)
}
