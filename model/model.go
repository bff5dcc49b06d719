package model

import (
	"context"
	"encoding/json"
	"iter"
)

// Model is a language model. Implementations must be safe for concurrent use.
//
// Stream yields chunks as they arrive; breaking out of the loop cancels the
// request. Invoke is equivalent to draining Stream through an Accumulator, and
// providers may implement it with a non-streaming call.
//
// A Request's slices are the caller's: an implementation may keep them, and
// must not modify their elements (an agent's request holds the run's own
// working messages, and its History the history cache's). A model that
// implements HistoryReader reads the conversation with Request.All (History,
// then Messages); a model that does not is sent requests with an empty
// History and the whole conversation in Messages (Request.For).
//
// The *Request itself is lent for the call only (until Invoke returns, or
// Stream's iterator ends): an agent reuses one Request for every model
// call of a run, so an implementation that needs it later keeps a copy of
// the struct (its slices may be kept, as above), not the pointer.
type Model interface {
	Info() Info
	Invoke(ctx context.Context, req *Request) (*Response, error)
	Stream(ctx context.Context, req *Request) iter.Seq2[*Chunk, error]
}

// Info names a model: Provider is e.g. "OpenAI", ID the provider's model id.
type Info struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Provider string `json:"provider"`
}

// ToolSpec describes a tool to the model. Parameters is a JSON Schema object.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      bool            `json:"strict,omitempty"`
}

// ResponseFormat asks for structured output matching a JSON Schema.
type ResponseFormat struct {
	Name   string          `json:"name"`
	Schema json.RawMessage `json:"schema"`
	Strict bool            `json:"strict,omitempty"`
}

// ToolName is the name of the tool a provider without a native structured
// output forces the answer through (Anthropic, Bedrock): Name with every
// character outside [a-zA-Z0-9_-] replaced by '_', cut to 64 bytes, or
// "structured_output" when that leaves nothing.
func (f *ResponseFormat) ToolName() string {
	b := []byte(f.Name)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 64 {
		b = b[:64]
	}
	if len(b) == 0 {
		return "structured_output"
	}
	return string(b)
}

// Request is one call to a model. The conversation is History followed by
// Messages; read it with All, Backward or Collect.
type Request struct {
	// History is the earlier, shared and read-only, part of the
	// conversation (an agent's system message and history runs).
	History History
	// Messages follow History: the caller's own messages of this call.
	Messages []Message
	Tools    []ToolSpec
	// ToolChoice is "", "auto", "none", "required" or a tool name.
	ToolChoice     string
	ResponseFormat *ResponseFormat
	Temperature    *float64
	MaxTokens      int
	// ThinkingBudget caps reasoning tokens for this call (Anthropic and Bedrock
	// extended thinking, Gemini's thinkingBudget); a provider without such a
	// setting returns ErrUnsupportedParam. The fields above and below override
	// the model's Params for this call.
	ThinkingBudget int
	// ParallelToolCalls, when non-nil, is passed to providers that support it.
	ParallelToolCalls *bool
}

// Response is a complete model answer.
type Response struct {
	// Message is the assistant message: content, tool calls and reasoning.
	Message Message `json:"message"`
	Usage   Usage   `json:"usage"`
	// StopReason is the provider's reason the answer ended ("stop",
	// "length", "tool_calls", …). An answer a provider blocked before any
	// content (a content filter, a safety block, a refusal) is not a
	// Response with an empty message: every provider returns a
	// ProviderError of kind ErrBadRequest naming the block instead (Blocked).
	StopReason string `json:"stop_reason,omitempty"`
	// ModelID is the model the provider reports having used.
	ModelID string `json:"model_id,omitempty"`
}

// Usage counts tokens; on a message it is Agno's MessageMetrics. JSON names
// follow Agno's metrics. Every provider normalises to Agno's reading:
// InputTokens is what the provider reports as input (OpenAI and Gemini count
// cached tokens in it, Anthropic and Bedrock do not), CacheReadTokens and
// CacheWriteTokens are counted apart, ReasoningTokens are the part of the
// output spent thinking.
type Usage struct {
	InputTokens      int `json:"input_tokens,omitempty"`
	OutputTokens     int `json:"output_tokens,omitempty"`
	TotalTokens      int `json:"total_tokens,omitempty"`
	CacheReadTokens  int `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int `json:"reasoning_tokens,omitempty"`
	// Cost is what the provider billed, when it says (OpenRouter's usage.cost).
	Cost float64 `json:"cost,omitempty"`
	// Duration and TimeToFirstToken (seconds) time one model call; the agent
	// sets them on the assistant message it records.
	Duration         float64 `json:"duration,omitempty"`
	TimeToFirstToken float64 `json:"time_to_first_token,omitempty"`
}

// Add accumulates o into u: counts, cost and durations add up; the first
// time to first token is kept, as Agno does.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.TotalTokens += o.TotalTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.ReasoningTokens += o.ReasoningTokens
	u.Cost += o.Cost
	u.Duration += o.Duration
	if u.TimeToFirstToken == 0 {
		u.TimeToFirstToken = o.TimeToFirstToken
	}
}

// Chunk is one streamed piece of a response. Fields are deltas except Usage,
// StopReason and ModelID, which providers usually send once near the end.
type Chunk struct {
	Content          string          `json:"content,omitempty"`
	ReasoningContent string          `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCallDelta `json:"tool_calls,omitempty"`
	// Thinking carries a completed signed thinking block (Anthropic).
	Thinking *ThinkingBlock `json:"thinking,omitempty"`
	// ProviderData keys are merged into the message's ProviderData (later
	// chunks win); see Message.ProviderData.
	ProviderData map[string]any `json:"provider_data,omitempty"`
	Usage        *Usage         `json:"usage,omitempty"`
	StopReason   string         `json:"stop_reason,omitempty"`
	ModelID      string         `json:"model_id,omitempty"`
}

// ToolCallDelta is a fragment of a streamed tool call. Index identifies the call
// across fragments; ID and Name arrive once, Arguments in pieces.
type ToolCallDelta struct {
	Index     int    `json:"index"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	// ThoughtSignature arrives once, with the call (Gemini).
	ThoughtSignature string `json:"thought_signature,omitempty"`
}

// URLAccepter is the optional ability of a model to take a media part by
// URL (the provider fetches it) instead of its bytes, by the part's type
// and MIME type ("" when unknown). Media stored as references are then
// sent as fresh signed URLs; without it they are sent as bytes.
type URLAccepter interface {
	AcceptsURL(t PartType, mimeType string) bool
}

// AcceptsURL reports whether m takes a part of this type by URL.
func AcceptsURL(m Model, t PartType, mimeType string) bool {
	ua, ok := m.(URLAccepter)
	return ok && ua.AcceptsURL(t, mimeType)
}
