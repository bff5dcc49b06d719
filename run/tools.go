package run

import (
	"encoding/json"
	"maps"

	"github.com/agentryhq/agentry/internal/lossless"
)

// ToolExecution is one tool call and its outcome (Agno's ToolExecution).
// Stored members it does not model (approval_id, user_feedback_schema, …)
// are kept in Extra.
type ToolExecution struct {
	ToolCallID    string          `json:"tool_call_id,omitempty"`
	ToolName      string          `json:"tool_name,omitempty"`
	ToolArgs      json.RawMessage `json:"tool_args,omitempty"`
	Result        string          `json:"result,omitempty"`
	ToolCallError bool            `json:"tool_call_error,omitempty"`
	Metrics       *Metrics        `json:"metrics,omitempty"`
	// HITL state.
	RequiresConfirmation      bool            `json:"requires_confirmation,omitempty"`
	Confirmed                 *bool           `json:"confirmed,omitempty"`
	ConfirmationNote          string          `json:"confirmation_note,omitempty"`
	RequiresUserInput         bool            `json:"requires_user_input,omitempty"`
	UserInputSchema           json.RawMessage `json:"user_input_schema,omitempty"`
	Answered                  *bool           `json:"answered,omitempty"`
	ExternalExecutionRequired bool            `json:"external_execution_required,omitempty"`
	StopAfterToolCall         bool            `json:"stop_after_tool_call,omitempty"`
	CreatedAt                 int64           `json:"created_at,omitempty"`
	// ChildRunID is the run the call started (a team's delegation: the
	// member run), as Agno links them.
	ChildRunID string `json:"child_run_id,omitempty"`

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`
}

// ResultGiven reports whether the call has a result: a non-empty Result,
// or an empty one that was given as such (a stored or client-sent
// "result": "", or SetResult("")). An externally executed tool that printed
// nothing has a result, as in Agno (any result that is not None).
func (t *ToolExecution) ResultGiven() bool {
	if t.Result != "" {
		return true
	}
	raw := t.Extra["result"]
	return len(raw) > 0 && raw[0] == '"'
}

// SetResult sets the call's result, an empty one too (see ResultGiven).
func (t *ToolExecution) SetResult(s string) {
	t.Result = s
	if s == "" {
		t.Extra = maps.Clone(t.Extra) // may be shared with a stored copy
		if t.Extra == nil {
			t.Extra = map[string]json.RawMessage{}
		}
		t.Extra["result"] = json.RawMessage(`""`)
	}
}

type toolExecution ToolExecution

// MarshalJSON writes the tool execution with Extra.
func (t ToolExecution) MarshalJSON() ([]byte, error) {
	return lossless.Marshal((*toolExecution)(&t), t.Extra)
}

// UnmarshalJSON reads a stored tool execution, keeping what it does not model in Extra.
func (t *ToolExecution) UnmarshalJSON(b []byte) error {
	var v toolExecution
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	*t = ToolExecution(v)
	return nil
}

// Requirement is something a PAUSED run waits for before it can continue
// (Agno's RunRequirement). Stored members it does not model (created_at,
// confirmation, external_execution_result, …) are kept in Extra.
type Requirement struct {
	ID            string         `json:"id"`
	ToolExecution *ToolExecution `json:"tool_execution,omitempty"`
	// Kind is "confirmation", "user_input" or "external_execution". Agentry
	// writes it; Agno derives the same from tool_execution and ignores it.
	Kind string `json:"kind,omitempty"`
	// A requirement of a team member's run that paused its team's run names
	// the member and its paused run (Agno's member_agent_id, …).
	MemberAgentID   string `json:"member_agent_id,omitempty"`
	MemberAgentName string `json:"member_agent_name,omitempty"`
	MemberRunID     string `json:"member_run_id,omitempty"`

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`
}

type requirement Requirement

// MarshalJSON writes the requirement with Extra.
func (r Requirement) MarshalJSON() ([]byte, error) {
	return lossless.Marshal((*requirement)(&r), r.Extra)
}

// UnmarshalJSON reads a stored requirement, keeping what it does not model in Extra.
func (r *Requirement) UnmarshalJSON(b []byte) error {
	var v requirement
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	*r = Requirement(v)
	return nil
}

// ReasoningStep is one step recorded from a reasoning model (Agno's
// ReasoningStep). Stored members it does not model are kept in Extra.
type ReasoningStep struct {
	Title      string  `json:"title,omitempty"`
	Reasoning  string  `json:"reasoning,omitempty"`
	Action     string  `json:"action,omitempty"`
	Result     string  `json:"result,omitempty"`
	NextAction string  `json:"next_action,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`
}

type reasoningStep ReasoningStep

// MarshalJSON writes the step with Extra.
func (s ReasoningStep) MarshalJSON() ([]byte, error) {
	return lossless.Marshal((*reasoningStep)(&s), s.Extra)
}

// UnmarshalJSON reads a stored step, keeping what it does not model in Extra.
func (s *ReasoningStep) UnmarshalJSON(b []byte) error {
	var v reasoningStep
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	*s = ReasoningStep(v)
	return nil
}
