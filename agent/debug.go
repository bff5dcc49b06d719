package agent

import (
	"fmt"
	"io"
	"strings"

	textclip "github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/run"
)

// debugTrace writes Config.DebugMode's human-readable run trace: one line per
// run event (content deltas, sent with sendDelta, excepted), with the system and user messages when
// the model is first asked. It is for a person at a terminal, not a parser.
type debugTrace struct {
	w io.Writer
}

const debugClip = 400

func clip(s string) string {
	s = strings.ReplaceAll(s, "\n", `\n`)
	if c, cut := textclip.Bytes(s, debugClip); cut {
		return c + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

// trace writes e's line; st gives the messages of the first model request.
func (d *debugTrace) trace(st *state, e *run.Event) {
	var detail string
	switch {
	case e.Tool != nil:
		t := e.Tool
		detail = fmt.Sprintf("%s(%s)", t.ToolName, clip(string(t.ToolArgs)))
		if e.Event != st.p.comp.EventName(run.EventToolCallStarted) {
			detail += " -> " + clip(t.Result)
		}
	case e.PreHookName != "":
		detail = e.PreHookName
	case e.PostHookName != "":
		detail = e.PostHookName
	case e.ErrorType != "":
		detail = fmt.Sprintf("%s %s: %s", e.ErrorType, e.ErrorID, clip(run.ContentText(e.Content)))
	case e.Reason != "":
		detail = e.Reason
	case e.Model != "" && e.ModelRequestUsage != nil && e.InputTokens+e.OutputTokens > 0:
		detail = fmt.Sprintf("%s input_tokens=%d output_tokens=%d", e.Model, e.InputTokens, e.OutputTokens)
	case e.Model != "":
		detail = e.ModelProvider + ":" + e.Model
	case e.Content != nil:
		detail = clip(run.ContentText(e.Content))
	}
	if e.Metrics != nil {
		detail += fmt.Sprintf(" (tokens in=%d out=%d, %.3fs)", e.Metrics.InputTokens, e.Metrics.OutputTokens, e.Metrics.Duration)
	}
	fmt.Fprintf(d.w, "DEBUG agent=%s run=%s %s %s\n", st.p.id, st.out.RunID, e.Event, detail)
	if e.Event == st.p.comp.EventName(run.EventModelRequestStarted) && !st.debugMessages {
		st.debugMessages = true
		for _, m := range st.msgs {
			if m.FromHistory {
				continue
			}
			fmt.Fprintf(d.w, "DEBUG   %s: %s\n", m.Role, clip(m.Content))
		}
	}
}
