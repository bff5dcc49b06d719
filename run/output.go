package run

import (
	"encoding/json"

	"github.com/agentryhq/agentry/model"
)

// Media is an image, audio clip, video or file attached to a run. Once stored,
// Content is replaced by a URL or storage reference.
type Media struct {
	ID       string `json:"id,omitempty"`
	URL      string `json:"url,omitempty"`
	Filepath string `json:"filepath,omitempty"`
	Content  []byte `json:"content,omitempty"`
	MIMEType string `json:"mime_type,omitempty"`
	Format   string `json:"format,omitempty"`
	Name     string `json:"name,omitempty"`
	Size     int64  `json:"size,omitempty"`
}

// Input is what the caller sent to start a run (Agno's RunInput).
type Input struct {
	InputContent any     `json:"input_content,omitempty"`
	Images       []Media `json:"images,omitempty"`
	Videos       []Media `json:"videos,omitempty"`
	Audio        []Media `json:"audio,omitempty"`
	Files        []Media `json:"files,omitempty"`
}

// TextInput is a convenience for a plain-text input.
func TextInput(s string) Input { return Input{InputContent: s} }

// Text returns the input content as text (JSON for non-string content).
func (in Input) Text() string { return ContentText(in.InputContent) }

// ContentText is run content as text: a string as is, anything else (structured
// output) as JSON.
func ContentText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// Metrics are a run's or message's measurements, in Agno's field names.
type Metrics struct {
	model.Usage
	// Duration of the run in seconds.
	Duration float64 `json:"duration,omitempty"`
	// TimeToFirstToken in seconds.
	TimeToFirstToken float64 `json:"time_to_first_token,omitempty"`
	// Details breaks the tokens down by model role ("model",
	// "reasoning_model") and by model, as Agno's metrics.details does: after a
	// fallback it names the model that answered.
	Details map[string][]ModelMetrics `json:"details,omitempty"`
}

// ModelMetrics is one model's share of a run's tokens (Agno's ModelMetrics).
type ModelMetrics struct {
	ID       string `json:"id"`
	Provider string `json:"provider"`
	model.Usage
}

// ToolExecution is one tool call and its outcome (Agno's ToolExecution).
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
}

// Requirement is something a PAUSED run waits for before it can continue.
type Requirement struct {
	ID            string         `json:"id"`
	ToolExecution *ToolExecution `json:"tool_execution,omitempty"`
	// Kind is "confirmation", "user_input" or "external_execution".
	Kind string `json:"kind,omitempty"`
}

// ReasoningStep is one step recorded from a reasoning model.
type ReasoningStep struct {
	Title      string  `json:"title,omitempty"`
	Reasoning  string  `json:"reasoning,omitempty"`
	Action     string  `json:"action,omitempty"`
	Result     string  `json:"result,omitempty"`
	NextAction string  `json:"next_action,omitempty"`
	Confidence float64 `json:"confidence,omitempty"`
}

// Output is a run as stored in run_data and returned by Run (Agno's RunOutput;
// team runs use the team fields and MemberResponses). Unknown fields read from
// storage are kept in Extra and written back unchanged.
type Output struct {
	RunID        string `json:"run_id"`
	AgentID      string `json:"agent_id,omitempty"`
	AgentName    string `json:"agent_name,omitempty"`
	TeamID       string `json:"team_id,omitempty"`
	TeamName     string `json:"team_name,omitempty"`
	WorkflowID   string `json:"workflow_id,omitempty"`
	WorkflowName string `json:"workflow_name,omitempty"`
	SessionID    string `json:"session_id,omitempty"`
	ParentRunID  string `json:"parent_run_id,omitempty"`
	UserID       string `json:"user_id,omitempty"`

	Input       *Input `json:"input,omitempty"`
	Content     any    `json:"content,omitempty"`
	ContentType string `json:"content_type,omitempty"`

	Model         string `json:"model,omitempty"`
	ModelProvider string `json:"model_provider,omitempty"`

	Messages []model.Message `json:"messages,omitempty"`
	Tools    []ToolExecution `json:"tools,omitempty"`
	Metrics  *Metrics        `json:"metrics,omitempty"`

	ReasoningContent  string          `json:"reasoning_content,omitempty"`
	ReasoningSteps    []ReasoningStep `json:"reasoning_steps,omitempty"`
	ReasoningMessages []model.Message `json:"reasoning_messages,omitempty"`

	Images        []Media `json:"images,omitempty"`
	Videos        []Media `json:"videos,omitempty"`
	Audio         []Media `json:"audio,omitempty"`
	Files         []Media `json:"files,omitempty"`
	ResponseAudio *Media  `json:"response_audio,omitempty"`

	Citations       json.RawMessage   `json:"citations,omitempty"`
	References      json.RawMessage   `json:"references,omitempty"`
	Metadata        map[string]any    `json:"metadata,omitempty"`
	SessionState    map[string]any    `json:"session_state,omitempty"`
	Events          []Event           `json:"events,omitempty"`
	Requirements    []Requirement     `json:"requirements,omitempty"`
	MemberResponses []json.RawMessage `json:"member_responses,omitempty"`

	Status    Status `json:"status,omitempty"`
	CreatedAt int64  `json:"created_at,omitempty"`
	UpdatedAt int64  `json:"updated_at,omitempty"`

	// Extra holds fields this version does not know, keyed by JSON name.
	Extra map[string]json.RawMessage `json:"-"`
}

// ContentString returns Content as text (JSON for structured output).
func (o *Output) ContentString() string { return ContentText(o.Content) }

// Type derives the run_type the way Agno's migration does: agent if agent_id,
// else team if team_id, else workflow.
func (o *Output) Type() Type {
	switch {
	case o.AgentID != "":
		return TypeAgent
	case o.TeamID != "":
		return TypeTeam
	default:
		return TypeWorkflow
	}
}

type outputAlias Output

// MarshalJSON writes known fields then any Extra fields not shadowed by them.
func (o Output) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(outputAlias(o))
	if err != nil || len(o.Extra) == 0 {
		return b, err
	}
	var known map[string]json.RawMessage
	if err := json.Unmarshal(b, &known); err != nil {
		return nil, err
	}
	for k, v := range o.Extra {
		if _, ok := known[k]; !ok && !knownOutputFields[k] {
			known[k] = v
		}
	}
	return json.Marshal(known)
}

// UnmarshalJSON reads known fields and keeps the rest in Extra.
func (o *Output) UnmarshalJSON(b []byte) error {
	var a outputAlias
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for k := range all {
		if knownOutputFields[k] {
			delete(all, k)
		}
	}
	if len(all) > 0 {
		a.Extra = all
	}
	*o = Output(a)
	return nil
}

var knownOutputFields = jsonFieldNames(Output{})
