package model

import "encoding/json"

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
}

// ToolCall is a model's request to call a tool. Arguments is the raw JSON text the
// model produced; it may be invalid and is validated before the call.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// ThoughtSignature is Gemini's opaque signature of the reasoning behind
	// this call, sent back with it on the next turn (Agno's name).
	ThoughtSignature string `json:"thought_signature,omitempty"`
}

// Message is one turn of a conversation. JSON field names follow Agno's run_data
// message layout so messages can be stored in runs as they are.
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
	ProviderData map[string]any `json:"provider_data,omitempty"`
	FromHistory  bool           `json:"from_history,omitempty"`
	Metrics      *Usage         `json:"metrics,omitempty"`
	CreatedAt    int64          `json:"created_at,omitempty"`
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
