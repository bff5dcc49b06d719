package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentryhq/agentry/internal/sse"
	"github.com/agentryhq/agentry/model"
)

// streamEvent is the union of every event's data; each frame fills the fields
// its type uses.
type streamEvent struct {
	Type         string        `json:"type"`
	Index        int           `json:"index"`
	Message      *wireResponse `json:"message"`
	ContentBlock *wireContent  `json:"content_block"`
	Delta        streamDelta   `json:"delta"` // a value: one allocation less per delta
	Usage        *wireUsage    `json:"usage"`
	Error        *wireErrBody  `json:"error"`
}

type streamDelta struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	PartialJSON string `json:"partial_json"`
	Thinking    string `json:"thinking"`
	Signature   string `json:"signature"`
	StopReason  string `json:"stop_reason"`
}

// blockState is an open content block, keyed by Anthropic's block index.
type blockState struct {
	kind       string
	toolIndex  int  // dense index among tool calls
	isFormat   bool // the structured-output tool
	sawArgs    bool
	startInput json.RawMessage
	thinking   strings.Builder
	signature  string
	data       string
}

// streamDecoder turns Messages API stream events into chunks.
type streamDecoder struct {
	formatTool string
	yield      func(*model.Chunk, error) bool
	blocks     map[int]*blockState
	nextTool   int
	userTools  int
	formatSeen bool
	usage      model.Usage
	// pending holds text in structured mode: it is dropped if the structured
	// tool is called and sent at message_stop otherwise, so Stream and Invoke
	// give the same Content.
	pending strings.Builder
	ev      streamEvent
	// modelID and started: message_start's model id and usage ride on the
	// first chunk with content (or on message_stop's), not on a chunk of
	// their own, so an error event before any content reaches the caller
	// with no chunk yielded and model.WithRetry can retry it.
	modelID string
	started bool
	// produced: text, thinking or a tool call came (a refusal after it
	// keeps it; before it, the refusal is the answer's error).
	produced bool
}

// refused is the error of an answer Claude refused before any content
// (stop_reason "refusal").
func refused() error {
	return model.Blocked(providerName, "refused (stop_reason refusal)", "rephrase the prompt")
}

// errStop ends decoding early without an error: the consumer stopped or the
// message is complete.
var errStop = errors.New("stop")

// decodeStream reads an Anthropic SSE body and yields chunks. It returns nil
// after message_stop or when yield asks to stop, and an error wrapping
// model.ErrMalformedResponse for anything that cannot be a complete message.
// It never yields the returned error itself.
func decodeStream(r io.Reader, formatTool string, yield func(*model.Chunk, error) bool) error {
	d := &streamDecoder{formatTool: formatTool, yield: yield}
	for ev, err := range sse.Read(r, 0) {
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("anthropic: stream truncated mid-event: %w: %w", model.ErrMalformedResponse, err)
			}
			return fmt.Errorf("anthropic: reading stream: %w: %w", model.ErrMalformedResponse, err)
		}
		if err := d.handle(ev); err != nil {
			if err == errStop {
				return nil
			}
			return err
		}
	}
	return fmt.Errorf("anthropic: stream ended before message_stop (truncated): %w", model.ErrMalformedResponse)
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("anthropic: stream: %w: %s", model.ErrMalformedResponse, fmt.Sprintf(format, args...))
}

func (d *streamDecoder) emit(c *model.Chunk) error {
	d.produced = d.produced || c.Content != "" || c.ReasoningContent != "" || len(c.ToolCalls) > 0 || c.Thinking != nil
	if !d.started {
		d.started = true
		c.ModelID = d.modelID
		if c.Usage == nil {
			c.Usage = new(d.usage)
		}
	}
	if !d.yield(c, nil) {
		return errStop
	}
	return nil
}

func (d *streamDecoder) handle(frame sse.Event) error {
	ev := &d.ev
	*ev = streamEvent{}
	if err := json.Unmarshal(frame.Data, ev); err != nil {
		return fmt.Errorf("anthropic: stream: %w: event %q: %w", model.ErrMalformedResponse, frame.Event, err)
	}
	typ := ev.Type
	if typ == "" {
		typ = frame.Event
	}
	switch typ {
	case "message_start":
		if ev.Message == nil {
			return malformed("message_start without message")
		}
		ev.Message.Usage.applyTo(&d.usage)
		d.modelID = ev.Message.Model
		return nil
	case "content_block_start":
		if ev.ContentBlock == nil {
			return malformed("content_block_start %d without content_block", ev.Index)
		}
		return d.startBlock(ev.Index, ev.ContentBlock)
	case "content_block_delta":
		if ev.Delta.Type == "" {
			return malformed("content_block_delta %d without delta type", ev.Index)
		}
		return d.blockDelta(ev.Index, &ev.Delta)
	case "content_block_stop":
		return d.stopBlock(ev.Index)
	case "message_delta":
		if ev.Delta.StopReason == "refusal" && !d.produced && d.pending.Len() == 0 {
			return refused()
		}
		ev.Usage.applyTo(&d.usage)
		return d.emit(&model.Chunk{
			Usage:      new(d.usage),
			StopReason: structuredStop(ev.Delta.StopReason, d.formatSeen, d.userTools),
		})
	case "message_stop":
		if d.formatTool != "" && !d.formatSeen && d.pending.Len() > 0 {
			if err := d.emit(&model.Chunk{Content: d.pending.String()}); err != nil {
				return err
			}
		}
		if !d.started {
			if err := d.emit(&model.Chunk{}); err != nil {
				return err
			}
		}
		return errStop
	case "error":
		var typ, msg string
		if ev.Error != nil {
			typ, msg = ev.Error.Type, ev.Error.Message
		}
		return streamError(typ, msg)
	}
	// ping and event types added after this code was written.
	return nil
}

func (d *streamDecoder) startBlock(index int, cb *wireContent) error {
	if d.blocks == nil {
		d.blocks = make(map[int]*blockState, 4)
	}
	st := &blockState{kind: cb.Type}
	d.blocks[index] = st
	switch cb.Type {
	case "text":
		return d.text(cb.Text)
	case "tool_use":
		st.startInput = cb.Input
		if d.formatTool != "" && cb.Name == d.formatTool {
			st.isFormat, d.formatSeen = true, true
			d.pending.Reset()
			return nil
		}
		st.toolIndex = d.nextTool
		d.nextTool++
		d.userTools++
		return d.emit(&model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: st.toolIndex, ID: cb.ID, Name: cb.Name}}})
	case "thinking":
		st.thinking.WriteString(cb.Thinking)
		st.signature = cb.Signature
		if cb.Thinking != "" {
			return d.emit(&model.Chunk{ReasoningContent: cb.Thinking})
		}
	case "redacted_thinking":
		st.data = cb.Data
	}
	return nil
}

func (d *streamDecoder) text(s string) error {
	if s == "" {
		return nil
	}
	if d.formatTool != "" {
		if !d.formatSeen {
			d.pending.WriteString(s)
		}
		return nil
	}
	return d.emit(&model.Chunk{Content: s})
}

func (d *streamDecoder) blockDelta(index int, delta *streamDelta) error {
	st := d.blocks[index]
	switch delta.Type {
	case "text_delta":
		return d.text(delta.Text)
	case "input_json_delta":
		if st == nil {
			return malformed("input_json_delta for block %d, which was never started", index)
		}
		if st.kind != "tool_use" || delta.PartialJSON == "" {
			// server_tool_use input is the provider's business, not a call for us.
			return nil
		}
		st.sawArgs = true
		if st.isFormat {
			return d.emit(&model.Chunk{Content: delta.PartialJSON})
		}
		return d.emit(&model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: st.toolIndex, Arguments: delta.PartialJSON}}})
	case "thinking_delta":
		if st != nil && st.kind == "thinking" {
			st.thinking.WriteString(delta.Thinking)
		}
		if delta.Thinking == "" {
			return nil
		}
		return d.emit(&model.Chunk{ReasoningContent: delta.Thinking})
	case "signature_delta":
		if st != nil && st.kind == "thinking" {
			st.signature += delta.Signature
		}
	}
	// citations_delta and newer delta types carry nothing model.Chunk holds.
	return nil
}

func (d *streamDecoder) stopBlock(index int) error {
	st := d.blocks[index]
	if st == nil {
		return nil
	}
	delete(d.blocks, index)
	switch st.kind {
	case "thinking":
		return d.emit(&model.Chunk{Thinking: &model.ThinkingBlock{Type: "thinking", Thinking: st.thinking.String(), Signature: st.signature}})
	case "redacted_thinking":
		return d.emit(&model.Chunk{Thinking: &model.ThinkingBlock{Type: "redacted_thinking", Data: st.data}})
	case "tool_use":
		if st.sawArgs {
			return nil
		}
		// A call without arguments streams no input_json_delta; its arguments
		// are the start block's input, normally {}.
		args := toolArguments(st.startInput)
		if st.isFormat {
			return d.emit(&model.Chunk{Content: args})
		}
		return d.emit(&model.Chunk{ToolCalls: []model.ToolCallDelta{{Index: st.toolIndex, Arguments: args}}})
	}
	return nil
}
