package model

import (
	"encoding/json"

	"github.com/agentryhq/agentry/internal/lossless"
)

// Role is the author of a message.
type Role string

// Message roles understood by every provider.
const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// PartType tells what a Part carries.
type PartType string

// Part types of a multimodal message.
const (
	PartText  PartType = "text"
	PartImage PartType = "image"
	PartAudio PartType = "audio"
	PartVideo PartType = "video"
	PartFile  PartType = "file"
)

// Part is one piece of a multimodal message. Exactly one of Text, URL or Data is
// expected to be set, according to Type.
type Part struct {
	Type     PartType `json:"type"`
	Text     string   `json:"text,omitempty"`
	URL      string   `json:"url,omitempty"`
	Data     []byte   `json:"data,omitempty"`
	MIMEType string   `json:"mime_type,omitempty"`
	Name     string   `json:"name,omitempty"`
	// MediaReference, in a stored message, replaces Data: the object's
	// media_reference (package media). The agent puts the bytes back
	// before a model call.
	MediaReference json.RawMessage `json:"media_reference,omitempty"`
}

// Message is one turn of a conversation. JSON field names follow Agno's run_data
// message layout so messages can be stored in runs as they are; members a
// stored message carries that Message does not model (Agno's images, audio,
// videos, files, provider_data, checkpoint_status, …) are kept in Extra.
type Message struct {
	ID      string `json:"id,omitempty"`
	Role    Role   `json:"role"`
	Content string `json:"content,omitempty"`
	// Parts carries multimodal content (images, audio, files) besides Content.
	Parts []Part `json:"parts,omitempty"`
	// ToolCalls are set on assistant messages that ask for tools.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID, ToolName, ToolArgs and ToolCallError are set on tool-result messages.
	ToolCallID       string          `json:"tool_call_id,omitempty"`
	ToolName         string          `json:"tool_name,omitempty"`
	ToolArgs         json.RawMessage `json:"tool_args,omitempty"`
	ToolCallError    bool            `json:"tool_call_error,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	// Thinking holds provider-signed reasoning blocks (Anthropic extended thinking)
	// that must be sent back verbatim on the next turn.
	Thinking []ThinkingBlock `json:"thinking,omitempty"`
	// ProviderData holds what a provider needs back on the next turn, under
	// Agno's keys: "reasoning_output" (Responses API reasoning items with
	// their encrypted content), "thought_signature" (Gemini), "response_id".
	ProviderData map[string]any  `json:"provider_data,omitempty"`
	FromHistory  bool            `json:"from_history,omitempty"`
	Metrics      *MessageMetrics `json:"metrics,omitempty"`
	CreatedAt    int64           `json:"created_at,omitempty"`

	// Extra keeps the members of a stored message that the fields above do
	// not hold (unknown ones, and the stored form of empty ones such as
	// "from_history": false), so a message read from storage is written back
	// unchanged. A field set in Go wins over its stored form.
	Extra map[string]json.RawMessage `json:"-"`
}

// message is Message without its JSON methods.
type message Message

// MarshalJSON writes the message in Agno's layout, with Extra.
func (m Message) MarshalJSON() ([]byte, error) {
	return lossless.Marshal((*message)(&m), m.Extra)
}

// UnmarshalJSON reads a stored message, keeping what it does not model in Extra.
func (m *Message) UnmarshalJSON(b []byte) error {
	var v message
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	*m = Message(v)
	return nil
}

// MessageMetrics are a message's measurements in Agno's field names
// (MessageMetrics): the tokens, cost and timing (Usage) of the model call
// that produced an assistant message, or the timing of a tool call on a tool
// message.
type MessageMetrics struct {
	Usage
	// Extra keeps stored members Usage does not hold (audio tokens,
	// provider_metrics, …). Usage stays comparable, so they live here.
	Extra map[string]json.RawMessage `json:"-"`
}

type messageMetrics MessageMetrics

// MarshalJSON writes the metrics with Extra.
func (m MessageMetrics) MarshalJSON() ([]byte, error) {
	return lossless.Marshal((*messageMetrics)(&m), m.Extra)
}

// UnmarshalJSON reads stored metrics, keeping what it does not model in Extra.
func (m *MessageMetrics) UnmarshalJSON(b []byte) error {
	var v messageMetrics
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	*m = MessageMetrics(v)
	return nil
}

// ThinkingBlock is an opaque reasoning block a provider asks to get back unchanged.
type ThinkingBlock struct {
	Type      string `json:"type"` // "thinking" or "redacted_thinking"
	Thinking  string `json:"thinking,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

// Text returns a user message with plain text.
func Text(role Role, content string) Message { return Message{Role: role, Content: content} }
