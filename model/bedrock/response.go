package bedrock

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/agentryhq/agentry/model"
)

type wireResponse struct {
	Output *struct {
		Message *struct {
			Content []responseBlock `json:"content"`
		} `json:"message"`
	} `json:"output"`
	StopReason string     `json:"stopReason"`
	Usage      *wireUsage `json:"usage"`
}

type responseBlock struct {
	Text             string            `json:"text"`
	ToolUse          *toolUse          `json:"toolUse"`
	ReasoningContent *reasoningContent `json:"reasoningContent"`
}

type wireUsage struct {
	InputTokens           int `json:"inputTokens"`
	OutputTokens          int `json:"outputTokens"`
	CacheReadInputTokens  int `json:"cacheReadInputTokens"`
	CacheWriteInputTokens int `json:"cacheWriteInputTokens"`
}

// usage follows Agno: Bedrock's inputTokens leave cached tokens out, which
// are counted apart, and the total is input plus output. Bedrock's own
// totalTokens is not used: it also counts the cache reads and writes, so
// the same Claude call would total more on Bedrock than on the Anthropic
// API, and than Agno records.
func (u *wireUsage) usage() *model.Usage {
	return &model.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens,
		CacheReadTokens: u.CacheReadInputTokens, CacheWriteTokens: u.CacheWriteInputTokens}
}

func decodeResponse(data []byte, formatTool string) (*model.Response, error) {
	var r wireResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("bedrock: response %q is not a Converse answer: %w: %v", snippet(data), model.ErrMalformedResponse, err)
	}
	if r.Output == nil || r.Output.Message == nil {
		return nil, fmt.Errorf("bedrock: response has no output message: %w", model.ErrMalformedResponse)
	}
	out := &model.Response{Message: model.Message{Role: model.RoleAssistant}, StopReason: r.StopReason}
	formatted := false
	for _, b := range r.Output.Message.Content {
		switch {
		case b.ToolUse != nil && formatTool != "" && b.ToolUse.Name == formatTool:
			out.Message.Content = compact(b.ToolUse.Input)
			formatted = true
		case b.ToolUse != nil:
			out.Message.ToolCalls = append(out.Message.ToolCalls, model.ToolCall{ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Arguments: compact(b.ToolUse.Input)})
		case b.ReasoningContent != nil:
			out.Message.Thinking = append(out.Message.Thinking, thinkingBlock(b.ReasoningContent))
			if rt := b.ReasoningContent.ReasoningText; rt != nil {
				out.Message.ReasoningContent += rt.Text
			}
		default:
			if !formatted {
				out.Message.Content += b.Text
			}
		}
	}
	if formatted && len(out.Message.ToolCalls) == 0 && out.StopReason == "tool_use" {
		out.StopReason = "end_turn"
	}
	if r.Usage != nil {
		out.Usage = *r.Usage.usage()
	}
	m := &out.Message
	if err := emptyStop(out.StopReason, m.Content != "" || m.ReasoningContent != "" || len(m.ToolCalls) > 0); err != nil {
		return nil, err
	}
	return out, nil
}

// emptyStop is the error for an answer Converse stopped before any content
// for a reason the caller must hear of: the agent does not read stop
// reasons, and an empty answer would be recorded as a complete run. Nil
// when something was produced or the reason is an ordinary one.
func emptyStop(reason string, produced bool) error {
	if produced {
		return nil
	}
	switch reason {
	case "content_filtered":
		return model.Blocked(providerName, "blocked (stopReason content_filtered)", "rephrase the prompt")
	case "model_context_window_exceeded":
		return &model.ProviderError{Provider: providerName, Kind: model.ErrContextLength,
			Message: "the context window was full (stopReason model_context_window_exceeded) before any content; shorten the conversation"}
	case "malformed_model_output", "malformed_tool_use":
		// The generation failed on the provider's side; another try may
		// well succeed.
		return &model.ProviderError{Provider: providerName, Kind: model.ErrServer,
			Message: "the model's output did not parse (stopReason " + reason + ") before any content; retrying may help"}
	}
	return nil
}

func thinkingBlock(rc *reasoningContent) model.ThinkingBlock {
	if rc.RedactedContent != "" {
		return model.ThinkingBlock{Type: "redacted_thinking", Data: rc.RedactedContent}
	}
	tb := model.ThinkingBlock{Type: "thinking"}
	if rc.ReasoningText != nil {
		tb.Thinking, tb.Signature = rc.ReasoningText.Text, rc.ReasoningText.Signature
	}
	return tb
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(bytes.TrimSpace(raw)) == 0 {
		return "{}"
	}
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// streamEvent is the JSON payload of any ConverseStream event.
type streamEvent struct {
	ContentBlockIndex int `json:"contentBlockIndex"`
	Start             *struct {
		ToolUse *struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse"`
	} `json:"start"`
	Delta *struct {
		Text    *string `json:"text"`
		ToolUse *struct {
			Input string `json:"input"`
		} `json:"toolUse"`
		ReasoningContent *struct {
			Text            string `json:"text"`
			Signature       string `json:"signature"`
			RedactedContent string `json:"redactedContent"`
		} `json:"reasoningContent"`
	} `json:"delta"`
	StopReason string     `json:"stopReason"`
	Usage      *wireUsage `json:"usage"`
	Message    string     `json:"message"`
}

// maxEventPayload bounds one event's payload buffer.
const maxEventPayload = 1 << 20

// maxEventFrame bounds one whole frame: the payload limit, the 128 KiB of
// headers the event-stream format allows, prelude and CRCs.
const maxEventFrame = maxEventPayload + 128<<10 + 16

// readFrame reads one event-stream frame whole into buf, refusing from its
// prelude a frame larger than maxEventFrame: the SDK's decoder reads (and
// buffers) whatever length a prelude announces, up to 4 GiB. It returns
// io.EOF at a frame boundary and io.ErrUnexpectedEOF inside a frame.
func readFrame(r io.Reader, buf []byte) ([]byte, error) {
	var length [4]byte
	if _, err := io.ReadFull(r, length[:]); err != nil {
		return buf, err
	}
	n := int(binary.BigEndian.Uint32(length[:]))
	if n < 16 || n > maxEventFrame {
		return buf, fmt.Errorf("event frame of %d bytes announced (the limit is %d)", n, maxEventFrame)
	}
	buf = slices.Grow(append(buf[:0], length[:]...), n-4)[:n]
	if _, err := io.ReadFull(r, buf[4:]); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return buf, err
	}
	return buf, nil
}

// decodeStream reads ConverseStream's event-stream frames. A stream is whole
// once messageStop arrived (metadata with usage follows it); exceptions become
// classified errors; nothing in the body can make it panic.
func decodeStream(body io.Reader, formatTool string) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		dec := eventstream.NewDecoder()
		buf := make([]byte, 0, 16<<10)
		var frame []byte
		var (
			calls  = map[int]int{} // content block index → tool call ordinal
			format = -1            // block index of the structured-output tool
			// withInput holds the tool blocks that streamed some input; one
			// that streamed none (a tool without parameters) gets {} at its
			// contentBlockStop, as Converse gives it.
			withInput = map[int]bool{}
			thinking  *model.ThinkingBlock
			// pending holds the text of a structured-output request until
			// the model either calls the format tool (the text was a
			// preamble, dropped as Invoke drops it) or stops without it.
			pending   strings.Builder
			stopped   bool
			stop      string
			usageSent bool
			produced  bool // some content, reasoning or call was yielded
		)
		for {
			var (
				msg eventstream.Message
				err error
			)
			frame, err = readFrame(body, frame)
			if err == nil {
				msg, err = dec.Decode(bytes.NewReader(frame), buf[:0])
			}
			if err != nil {
				if errors.Is(err, io.EOF) && stopped {
					if !usageSent {
						yield(&model.Chunk{StopReason: stop}, nil)
					}
					return
				}
				yield(nil, fmt.Errorf("bedrock: reading event stream: %w: %w", model.ErrMalformedResponse, err))
				return
			}
			if len(msg.Payload) > maxEventPayload {
				yield(nil, fmt.Errorf("bedrock: event larger than %d bytes: %w", maxEventPayload, model.ErrMalformedResponse))
				return
			}
			mtype := headerString(msg.Headers, ":message-type")
			if mtype == "exception" || mtype == "error" {
				name := headerString(msg.Headers, ":exception-type") + headerString(msg.Headers, ":error-code")
				var ev streamEvent
				_ = json.Unmarshal(msg.Payload, &ev)
				yield(nil, streamError(name, ev.Message+headerString(msg.Headers, ":error-message")))
				return
			}
			var ev streamEvent
			if err := json.Unmarshal(msg.Payload, &ev); err != nil {
				yield(nil, fmt.Errorf("bedrock: event %q payload %q is not JSON: %w: %v", headerString(msg.Headers, ":event-type"), snippet(msg.Payload), model.ErrMalformedResponse, err))
				return
			}
			var c *model.Chunk
			switch headerString(msg.Headers, ":event-type") {
			case "contentBlockStart":
				if ev.Start != nil && ev.Start.ToolUse != nil {
					if formatTool != "" && ev.Start.ToolUse.Name == formatTool {
						format = ev.ContentBlockIndex
						pending.Reset()
						break
					}
					n := len(calls)
					calls[ev.ContentBlockIndex] = n
					c = &model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: n, ID: ev.Start.ToolUse.ToolUseID, Name: ev.Start.ToolUse.Name}}}
				}
			case "contentBlockDelta":
				if ev.Delta == nil {
					break
				}
				d := ev.Delta
				switch {
				case d.Text != nil:
					switch {
					case formatTool == "":
						c = &model.Chunk{Content: *d.Text}
					case format < 0:
						pending.WriteString(*d.Text)
					}
				case d.ToolUse != nil && ev.ContentBlockIndex == format:
					withInput[format] = withInput[format] || d.ToolUse.Input != ""
					c = &model.Chunk{Content: d.ToolUse.Input}
				case d.ToolUse != nil:
					n, ok := calls[ev.ContentBlockIndex]
					if !ok {
						yield(nil, fmt.Errorf("bedrock: tool input for block %d, which started no tool call: %w", ev.ContentBlockIndex, model.ErrMalformedResponse))
						return
					}
					withInput[ev.ContentBlockIndex] = withInput[ev.ContentBlockIndex] || d.ToolUse.Input != ""
					c = &model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: n, Arguments: d.ToolUse.Input}}}
				case d.ReasoningContent != nil:
					if thinking == nil {
						thinking = &model.ThinkingBlock{Type: "thinking"}
					}
					rc := d.ReasoningContent
					thinking.Thinking += rc.Text
					if rc.Signature != "" {
						thinking.Signature = rc.Signature
					}
					if rc.RedactedContent != "" {
						thinking.Type, thinking.Data = "redacted_thinking", rc.RedactedContent
					}
					if rc.Text != "" {
						c = &model.Chunk{ReasoningContent: rc.Text}
					}
				}
			case "contentBlockStop":
				i := ev.ContentBlockIndex
				n, isCall := calls[i]
				switch {
				case thinking != nil:
					c = &model.Chunk{Thinking: thinking}
					thinking = nil
				case i == format && !withInput[i]:
					c = &model.Chunk{Content: "{}"}
				case isCall && !withInput[i]:
					c = &model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: n, Arguments: "{}"}}}
				}
				withInput[i] = true // a repeated stop adds nothing
			case "messageStop":
				stopped, stop = true, ev.StopReason
				if format >= 0 && len(calls) == 0 && stop == "tool_use" {
					stop = "end_turn"
				}
				if pending.Len() > 0 {
					c = &model.Chunk{Content: pending.String()}
					pending.Reset()
				}
				if err := emptyStop(stop, produced || c != nil); err != nil {
					yield(nil, err)
					return
				}
			case "metadata":
				if !stopped {
					break
				}
				c = &model.Chunk{StopReason: stop}
				if ev.Usage != nil {
					c.Usage = ev.Usage.usage()
				}
				usageSent = true
			}
			if c != nil {
				produced = produced || c.Content != "" || c.ReasoningContent != "" || len(c.ToolCalls) > 0
				if !yield(c, nil) {
					return
				}
			}
		}
	}
}

func headerString(h eventstream.Headers, name string) string {
	v := h.Get(name)
	if v == nil {
		return ""
	}
	return v.String()
}

// streamError classifies an exception frame by its name.
func streamError(name, msg string) *model.ProviderError {
	if msg == "" {
		msg = "stream exception"
	}
	pe := model.ClassifyHTTP(providerName, 0, nil, name+": "+msg)
	if k := exceptionKind(name); k != nil && pe.Kind != model.ErrContextLength {
		pe.Kind = k
	}
	return pe
}

func snippet(b []byte) string {
	const n = 120
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
