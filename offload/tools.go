package offload

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentryhq/agentry/tool"
)

// Names of the tools the model gets when offloading is on.
const (
	ReadToolName   = "read_result"
	SearchToolName = "search_result"
)

// ReadArgs are read_result's arguments.
type ReadArgs struct {
	ResultID  string `json:"result_id" jsonschema:"the id from a <result id=...> envelope"`
	StartLine int    `json:"start_line,omitempty" jsonschema:"first line to read, 1-based; default 1"`
	EndLine   int    `json:"end_line,omitempty" jsonschema:"last line to read, inclusive; at most 400 lines are returned"`
	StartChar int    `json:"start_char,omitempty" jsonschema:"characters of start_line to skip (to page through a very long line)"`
}

// SearchArgs are search_result's arguments.
type SearchArgs struct {
	ResultID     string `json:"result_id" jsonschema:"the id from a <result id=...> envelope"`
	Pattern      string `json:"pattern" jsonschema:"regular expression (RE2 syntax), matched against each line"`
	ContextLines int    `json:"context_lines,omitempty" jsonschema:"lines of context before and after each match, 0 to 5"`
}

// Tools returns read_result and search_result. They read the results of the
// scope set on their context by WithScope; without one every id is not found.
func (o *Offloader) Tools() []tool.Tool { return o.tools }

func (o *Offloader) buildTools() ([]tool.Tool, error) {
	read, err := tool.Func(tool.FuncConfig{Name: ReadToolName,
		Description: "Read part of a large tool result that was stored outside the conversation (shown as <result id=...>). Returns at most 400 lines / 16,000 characters; next_start_line tells where to continue."},
		func(ctx context.Context, in ReadArgs) (string, error) {
			s, _ := ScopeFrom(ctx)
			p, err := o.Read(ctx, s, strings.TrimSpace(in.ResultID), ReadRange{StartLine: in.StartLine, EndLine: in.EndLine, StartChar: in.StartChar})
			if err != nil {
				return "", modelError(err)
			}
			return formatPage(p), nil
		})
	if err != nil {
		return nil, err
	}
	search, err := tool.Func(tool.FuncConfig{Name: SearchToolName,
		Description: "Search a large stored tool result (shown as <result id=...>) for lines matching a regular expression; returns up to 20 matching lines with their line numbers. A long line is shown around its match; \"[... N chars omitted ...]\" before it means read_result with start_char=N reads on from there."},
		func(ctx context.Context, in SearchArgs) (string, error) {
			s, _ := ScopeFrom(ctx)
			ms, err := o.Search(ctx, s, strings.TrimSpace(in.ResultID), in.Pattern, in.ContextLines)
			if err != nil {
				return "", modelError(err)
			}
			return formatMatches(in.ResultID, ms), nil
		})
	if err != nil {
		return nil, err
	}
	return []tool.Tool{read, search}, nil
}

// modelError keeps what the model can act on and hides storage details.
func modelError(err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return errors.New("result not found: use a result_id from a <result> envelope of this conversation")
	case errors.Is(err, ErrBadRange), errors.Is(err, ErrBadPattern), errors.Is(err, ErrPatternTooLong), errors.Is(err, ErrSearchTooSlow):
		return err
	default:
		return fmt.Errorf("reading the stored result failed: %w", err)
	}
}

func formatPage(p Page) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%s lines %d-%d of %d]\n", p.ResultID, p.StartLine, p.EndLine, p.LineCount)
	b.WriteString(p.Text)
	switch {
	case p.NextStartChar > 0:
		fmt.Fprintf(&b, "\n[continue with start_line=%d start_char=%d]", p.NextStartLine, p.NextStartChar)
	case p.NextStartLine > 0:
		fmt.Fprintf(&b, "[continue with start_line=%d]", p.NextStartLine)
	default:
		b.WriteString("[end of result]")
	}
	return b.String()
}

func formatMatches(id string, ms []Match) string {
	if len(ms) == 0 {
		return "no lines of " + id + " match"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d matching lines in %s", len(ms), id)
	if len(ms) == MaxMatches {
		b.WriteString(" (the first 20; narrow the pattern for more)")
	}
	b.WriteString(":\n")
	for _, m := range ms {
		for i, l := range m.Before {
			fmt.Fprintf(&b, "%d- %s\n", m.LineNumber-len(m.Before)+i, l)
		}
		fmt.Fprintf(&b, "%d: %s\n", m.LineNumber, m.Line)
		for i, l := range m.After {
			fmt.Fprintf(&b, "%d- %s\n", m.LineNumber+1+i, l)
		}
	}
	return b.String()
}
