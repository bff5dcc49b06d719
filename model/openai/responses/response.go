package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"
	"slices"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/internal/sse"
	"github.com/agentryhq/agentry/model"
)

// wireResponse is a "response" object.
type wireResponse struct {
	ID                string            `json:"id"`
	Status            string            `json:"status"`
	Model             string            `json:"model"`
	Output            []json.RawMessage `json:"output"`
	Usage             *wireUsage        `json:"usage"`
	Error             *wireError        `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

// item is the part of an output item the decoder reads.
type item struct {
	Type      string `json:"type"`
	ID        string `json:"id"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type    string `json:"type"`
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

type wireUsage struct {
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	TotalTokens        int `json:"total_tokens"`
	InputTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// usage follows Agno: input includes the cached part, output the reasoning.
func (u *wireUsage) usage() *model.Usage {
	out := &model.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens}
	if d := u.InputTokensDetails; d != nil {
		out.CacheReadTokens = d.CachedTokens
	}
	if d := u.OutputTokensDetails; d != nil {
		out.ReasoningTokens = d.ReasoningTokens
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.InputTokens + out.OutputTokens
	}
	return out
}

// stopReason names how a response ended in Chat Completions' words, which
// the rest of Agentry already reads.
func (r *wireResponse) stopReason(calls bool) string {
	switch {
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens":
		return "length"
	case r.Status == "incomplete" && r.IncompleteDetails != nil:
		return r.IncompleteDetails.Reason
	case calls:
		return "tool_calls"
	}
	return "stop"
}

// replayedAfterReasoning reports whether an output item of type typ is
// replayed on the next turn (a message or a function call), so that a
// reasoning item just before it can be: OpenAI refuses a reasoning item
// "provided without its required following item", and a hosted tool's item
// (web_search_call) is not replayed.
func replayedAfterReasoning(typ string) bool {
	return typ == "message" || typ == "function_call"
}

// reasoningData is the ProviderData value holding the reasoning items seen so
// far: the item itself when there is one (Agno's shape), else the list.
func reasoningData(items []json.RawMessage) map[string]any {
	if len(items) == 1 {
		return map[string]any{reasoningKey: items[0]}
	}
	list, _ := json.Marshal(items)
	return map[string]any{reasoningKey: json.RawMessage(list)}
}

func (m *Model) decodeResponse(data []byte) (*model.Response, error) {
	var r wireResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("responses: answer %q is not a response object: %w: %v", m.snippet(data), model.ErrMalformedResponse, err)
	}
	if r.Error != nil && r.Status != "completed" {
		return nil, m.streamError(r.Error)
	}
	if err := m.unfinished(r.Status); err != nil {
		return nil, err
	}
	if r.Status == "" && len(r.Output) == 0 {
		return nil, fmt.Errorf("responses: answer has no output: %w", model.ErrMalformedResponse)
	}
	out := &model.Response{Message: model.Message{Role: model.RoleAssistant}, ModelID: r.Model}
	var reasoning []json.RawMessage
	var pending json.RawMessage // a reasoning item, kept if what follows is replayed
	for _, raw := range r.Output {
		var it item
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, fmt.Errorf("responses: output item %q: %w: %v", m.snippet(raw), model.ErrMalformedResponse, err)
		}
		if pending != nil && replayedAfterReasoning(it.Type) {
			reasoning = append(reasoning, pending)
		}
		pending = nil
		switch it.Type {
		case "message":
			for _, c := range it.Content {
				out.Message.Content += c.Text + c.Refusal
			}
		case "function_call":
			out.Message.ToolCalls = append(out.Message.ToolCalls, model.ToolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
		case "reasoning":
			pending = raw
			for _, s := range it.Summary {
				out.Message.ReasoningContent += s.Text
			}
		}
	}
	if len(reasoning) > 0 {
		out.Message.ProviderData = reasoningData(reasoning)
	}
	out.StopReason = r.stopReason(len(out.Message.ToolCalls) > 0)
	if out.StopReason == "content_filter" && out.Message.Content == "" && out.Message.ReasoningContent == "" && len(out.Message.ToolCalls) == 0 {
		return nil, m.filtered()
	}
	if r.Usage != nil {
		out.Usage = *r.Usage.usage()
	}
	return out, nil
}

// event is one streamed event; which fields are set depends on Type.
type event struct {
	Type        string          `json:"type"`
	OutputIndex int             `json:"output_index"`
	Delta       string          `json:"delta"`
	Item        json.RawMessage `json:"item"`
	Response    *wireResponse   `json:"response"`
	// An "error" event carries the error's fields at the top level, as
	// the API reference documents, or (as the API sends them at run time)
	// nested under "error".
	Message string          `json:"message"`
	Code    json.RawMessage `json:"code"`
	Error   json.RawMessage `json:"error"`
}

// streamedError is an "error" event's error: the nested object when there
// is one (a string there is its message), else the top-level fields.
func (e *event) streamedError() *wireError {
	var nested wireError
	if json.Unmarshal(e.Error, &nested) != nil {
		var text string
		if json.Unmarshal(e.Error, &text) == nil {
			nested.Message = text
		}
	}
	if nested.Message != "" || nested.Type != "" || nested.code() != "" {
		return &nested
	}
	return &wireError{Message: e.Message, Code: e.Code}
}

// decodeStream reads the event stream. It ends without error only after
// response.completed or response.incomplete; response.failed and error events
// become classified errors; nothing in the body can make it panic.
func (m *Model) decodeStream(body io.Reader) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		calls := map[int]int{} // output_index → tool call ordinal
		// withArgs holds the calls whose arguments have streamed; one that
		// streamed none gets them from its output_item.done.
		withArgs := map[int]bool{}
		// unannounced holds the argument deltas of outputs no
		// output_item.added announced (early bytes in all), kept for a call
		// that its output_item.done announces.
		unannounced := map[int][]byte{}
		early := 0
		var reasoning []json.RawMessage
		// pending is a reasoning item done, kept once the next item is one
		// that is replayed (see replayedAfterReasoning).
		var pending json.RawMessage
		follow := func(typ string) map[string]any {
			p := pending
			pending = nil
			if p == nil || !replayedAfterReasoning(typ) {
				return nil
			}
			reasoning = append(reasoning, p)
			return reasoningData(reasoning)
		}
		produced := false // text, reasoning or a call came
		// An image_generation_call's image (base64) rides in one event,
		// and response.completed repeats the whole output: a line may be
		// as large as a whole non-streamed answer.
		for ev, err := range sse.Read(body, model.MaxResponseBody) {
			if err != nil {
				yield(nil, fmt.Errorf("responses: reading stream: %w: %w", model.ErrMalformedResponse, err))
				return
			}
			data := bytes.TrimSpace(ev.Data)
			if len(data) == 0 || string(data) == "[DONE]" {
				continue
			}
			var e event
			if err := json.Unmarshal(data, &e); err != nil {
				yield(nil, fmt.Errorf("responses: stream event %q is not JSON: %w: %v", m.snippet(data), model.ErrMalformedResponse, err))
				return
			}
			var c *model.Chunk
			switch e.Type {
			case "response.output_text.delta", "response.refusal.delta":
				c = &model.Chunk{Content: e.Delta}
			case "response.reasoning_summary_text.delta":
				c = &model.Chunk{ReasoningContent: e.Delta}
			case "response.output_item.added":
				var it item
				if err := json.Unmarshal(e.Item, &it); err != nil {
					yield(nil, fmt.Errorf("responses: output item %q: %w: %v", m.snippet(e.Item), model.ErrMalformedResponse, err))
					return
				}
				if pd := follow(it.Type); pd != nil {
					c = &model.Chunk{ProviderData: pd}
				}
				if it.Type == "function_call" {
					n := len(calls)
					calls[e.OutputIndex] = n
					withArgs[e.OutputIndex] = it.Arguments != ""
					if c == nil {
						c = &model.Chunk{}
					}
					c.ToolCalls = []model.ToolCallDelta{{Index: n, ID: it.CallID, Name: it.Name, Arguments: it.Arguments}}
				}
			case "response.function_call_arguments.delta":
				n, ok := calls[e.OutputIndex]
				if !ok {
					// A call announced by its output_item.done only: its
					// arguments wait for it there.
					if early += len(e.Delta); early > model.MaxResponseBody {
						yield(nil, fmt.Errorf("responses: arguments of unannounced calls exceed %d bytes: %w", model.MaxResponseBody, model.ErrMalformedResponse))
						return
					}
					unannounced[e.OutputIndex] = append(unannounced[e.OutputIndex], e.Delta...)
					break
				}
				withArgs[e.OutputIndex] = withArgs[e.OutputIndex] || e.Delta != ""
				c = &model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: n, Arguments: e.Delta}}}
			case "response.output_item.done":
				var it item
				if err := json.Unmarshal(e.Item, &it); err != nil {
					yield(nil, fmt.Errorf("responses: output item %q: %w: %v", m.snippet(e.Item), model.ErrMalformedResponse, err))
					return
				}
				if it.Type == "reasoning" {
					pending = append(json.RawMessage(nil), e.Item...)
					break
				}
				// An item announced by its done event only follows the
				// reasoning before it too.
				pd := follow(it.Type)
				switch n, isCall := calls[e.OutputIndex]; {
				case it.Type == "function_call" && isCall && !withArgs[e.OutputIndex] && it.Arguments != "":
					withArgs[e.OutputIndex] = true
					c = &model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: n, Arguments: it.Arguments}}}
				case it.Type == "function_call" && !isCall:
					// Announced by its done event only: the whole call is here.
					// Arguments it streamed before are taken when it has none.
					n, args := len(calls), it.Arguments
					if args == "" {
						args = string(unannounced[e.OutputIndex])
					}
					delete(unannounced, e.OutputIndex)
					calls[e.OutputIndex], withArgs[e.OutputIndex] = n, true
					c = &model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: n, ID: it.CallID, Name: it.Name, Arguments: args}}}
				}
				if pd != nil {
					if c == nil {
						c = &model.Chunk{}
					}
					c.ProviderData = pd
				}
			case "response.completed", "response.incomplete":
				if e.Response == nil {
					yield(nil, fmt.Errorf("responses: %s without a response: %w", e.Type, model.ErrMalformedResponse))
					return
				}
				if len(unannounced) > 0 {
					i := slices.Min(slices.Collect(maps.Keys(unannounced)))
					yield(nil, fmt.Errorf("responses: arguments for output %d, which is no function call: %w", i, model.ErrMalformedResponse))
					return
				}
				c = &model.Chunk{ModelID: e.Response.Model, StopReason: e.Response.stopReason(len(calls) > 0)}
				if c.StopReason == "content_filter" && !produced {
					yield(nil, m.filtered())
					return
				}
				if e.Response.Usage != nil {
					c.Usage = e.Response.Usage.usage()
				}
				yield(c, nil)
				return
			case "response.failed":
				if e.Response != nil && e.Response.Error != nil {
					yield(nil, m.streamError(e.Response.Error))
				} else {
					yield(nil, m.unfinished("failed"))
				}
				return
			case "error":
				yield(nil, m.streamError(e.streamedError()))
				return
			}
			if c != nil {
				produced = produced || c.Content != "" || c.ReasoningContent != "" || len(c.ToolCalls) > 0
				if !yield(c, nil) {
					return
				}
			}
		}
		yield(nil, fmt.Errorf("responses: stream ended before response.completed (truncated): %w", model.ErrMalformedResponse))
	}
}

// snippet is the start of an answer that could not be decoded, for an error
// message, with the credentials sent blanked out (a gateway's page may echo
// the request's headers).
func (m *Model) snippet(b []byte) string {
	return clip.Mark(string(model.RedactSecrets(b, m.secrets()...)), 120, "…")
}
