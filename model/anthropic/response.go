package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentryhq/agentry/model"
)

// wireResponse is a Messages API answer, and the "message" of a stream's
// message_start event.
type wireResponse struct {
	Type       string        `json:"type"`
	Model      string        `json:"model"`
	Content    []wireContent `json:"content"`
	StopReason string        `json:"stop_reason"`
	Usage      *wireUsage    `json:"usage"`
	Error      *wireErrBody  `json:"error"`
}

type wireErrBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// wireContent is any content block of an answer.
type wireContent struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
}

// wireUsage is the usage of an answer, of message_start and of
// message_delta, which repeats some of the counts, cumulatively.
type wireUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

// applyTo sets the counts w reports over u's, except a zero: counts are
// cumulative, and Anthropic-compatible servers report 0 for a count they
// reported earlier (SGLang's message_delta input_tokens) or will report
// later (a message_start sent before the prompt was counted). Following
// Agno, input tokens are the uncached input Anthropic reports and the total
// is input plus output; cache reads and writes are counted separately.
func (w *wireUsage) applyTo(u *model.Usage) {
	if w == nil {
		return
	}
	set := func(dst *int, v *int) {
		if v != nil && *v != 0 {
			*dst = *v
		}
	}
	set(&u.InputTokens, w.InputTokens)
	set(&u.OutputTokens, w.OutputTokens)
	set(&u.CacheWriteTokens, w.CacheCreationInputTokens)
	set(&u.CacheReadTokens, w.CacheReadInputTokens)
	u.TotalTokens = u.InputTokens + u.OutputTokens
}

// toolArguments returns a tool_use input as argument text; a missing input is
// an empty object, so arguments are always JSON.
func toolArguments(input json.RawMessage) string {
	if len(input) == 0 || string(input) == "null" {
		return "{}"
	}
	return string(input)
}

// structuredStop reports the stop reason a caller should see: when the only
// tool called was the structured-output tool, the answer is final, not a
// request for tools.
func structuredStop(stop string, formatSeen bool, userTools int) string {
	if formatSeen && userTools == 0 && stop == "tool_use" {
		return "end_turn"
	}
	return stop
}

// decodeResponse turns a non-streaming answer into a model.Response. Text blocks
// are joined without separator, matching what the stream yields.
func decodeResponse(raw []byte, formatTool string) (*model.Response, error) {
	var w wireResponse
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("anthropic: decoding response: %w: %w", model.ErrMalformedResponse, err)
	}
	if w.Type == "error" || w.Error != nil {
		var typ, msg string
		if w.Error != nil {
			typ, msg = w.Error.Type, w.Error.Message
		}
		return nil, streamError(typ, msg)
	}
	if w.Type != "message" && w.Content == nil {
		return nil, fmt.Errorf("anthropic: decoding response: %w: no message in body", model.ErrMalformedResponse)
	}
	var (
		text, reasoning strings.Builder
		structured      string
		formatSeen      bool
		msg             = model.Message{Role: model.RoleAssistant}
	)
	for _, b := range w.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			if formatTool != "" && b.Name == formatTool {
				structured, formatSeen = toolArguments(b.Input), true
				continue
			}
			msg.ToolCalls = append(msg.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Arguments: toolArguments(b.Input)})
		case "thinking":
			reasoning.WriteString(b.Thinking)
			msg.Thinking = append(msg.Thinking, model.ThinkingBlock{Type: "thinking", Thinking: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			msg.Thinking = append(msg.Thinking, model.ThinkingBlock{Type: "redacted_thinking", Data: b.Data})
		}
	}
	msg.Content = text.String()
	if formatSeen {
		// Any prose around the forced tool call is not part of the structured answer.
		msg.Content = structured
	}
	msg.ReasoningContent = reasoning.String()
	if w.StopReason == "refusal" && msg.Content == "" && msg.ReasoningContent == "" && len(msg.ToolCalls) == 0 {
		return nil, refused()
	}
	resp := &model.Response{
		Message:    msg,
		StopReason: structuredStop(w.StopReason, formatSeen, len(msg.ToolCalls)),
		ModelID:    w.Model,
	}
	w.Usage.applyTo(&resp.Usage)
	return resp, nil
}
