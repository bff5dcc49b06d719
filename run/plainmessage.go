package run

import (
	"encoding/json"

	"github.com/agentryhq/agentry/model"
)

// plainMessage is model.Message's layout (TestPlainMessage_SameLayout checks
// it field by field) without its JSON methods and with its metrics seen
// without theirs, so that a run's messages are written in the one pass of
// the run_data encoding: encoding/json encodes a MarshalJSON method's result
// apart, then scans and copies it.
type plainMessage struct {
	ID               string                     `json:"id,omitempty"`
	Role             model.Role                 `json:"role"`
	Content          string                     `json:"content,omitempty"`
	Parts            []model.Part               `json:"parts,omitempty"`
	ToolCalls        []model.ToolCall           `json:"tool_calls,omitempty"`
	ToolCallID       string                     `json:"tool_call_id,omitempty"`
	ToolName         string                     `json:"tool_name,omitempty"`
	ToolArgs         json.RawMessage            `json:"tool_args,omitempty"`
	ToolCallError    bool                       `json:"tool_call_error,omitempty"`
	ReasoningContent string                     `json:"reasoning_content,omitempty"`
	Thinking         []model.ThinkingBlock      `json:"thinking,omitempty"`
	ProviderData     map[string]any             `json:"provider_data,omitempty"`
	FromHistory      bool                       `json:"from_history,omitempty"`
	Metrics          *plainMessageMetrics       `json:"metrics,omitempty"`
	CreatedAt        int64                      `json:"created_at,omitempty"`
	Extra            map[string]json.RawMessage `json:"-"`
}

// plainMessageMetrics is model.MessageMetrics without its JSON methods.
type plainMessageMetrics struct {
	model.Usage
	Extra map[string]json.RawMessage `json:"-"`
}

// messageExtra reports whether m must be written through its own
// MarshalJSON: it or its metrics keep stored members in Extra.
func messageExtra(m *model.Message) bool {
	return m.Extra != nil || m.Metrics != nil && m.Metrics.Extra != nil
}
