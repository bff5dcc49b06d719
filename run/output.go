package run

import (
	"bytes"
	"encoding/json"
	"sync"
	"unsafe"

	"github.com/agentryhq/agentry/internal/lossless"
	"github.com/agentryhq/agentry/model"
)

// Output is a run as stored in run_data and returned by Run (Agno's
// RunOutput; team runs use the team fields and MemberResponses, workflow runs
// the workflow fields and StepResults, as TeamRunOutput and WorkflowRunOutput
// do).
//
// Reading stored run_data loses nothing: members Output does not model
// (Agno's followups, additional_input, checkpoint and fork fields, …) are
// kept in Extra, and so is every nested level's (messages, tool calls, tool
// executions, metrics, media, requirements, events, step results); writing the
// run back restores them. Known fields accept every shape Agno has written.
type Output struct {
	RunID        string `json:"run_id,omitempty"`
	AgentID      string `json:"agent_id,omitempty"`
	AgentName    string `json:"agent_name,omitempty"`
	TeamID       string `json:"team_id,omitempty"`
	TeamName     string `json:"team_name,omitempty"`
	WorkflowID   string `json:"workflow_id,omitempty"`
	WorkflowName string `json:"workflow_name,omitempty"`
	SessionID    string `json:"session_id,omitempty"`
	ParentRunID  string `json:"parent_run_id,omitempty"`
	// WorkflowStepID is, on the run a workflow step executed (an agent's,
	// a team's or a nested workflow's), the step's id (StepOutput.StepID).
	WorkflowStepID string `json:"workflow_step_id,omitempty"`
	UserID         string `json:"user_id,omitempty"`

	// Input is a RunInput object for agent and team runs, and stored as the
	// bare input value for workflow runs (see Input).
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

	Citations    json.RawMessage `json:"citations,omitempty"`
	References   json.RawMessage `json:"references,omitempty"`
	Metadata     map[string]any  `json:"metadata,omitempty"`
	SessionState map[string]any  `json:"session_state,omitempty"`
	Events       []Event         `json:"events,omitempty"`
	Requirements []Requirement   `json:"requirements,omitempty"`
	// MemberResponses are a team run's member runs, each a run_data object
	// (decode one with json.Unmarshal into an Output), kept as stored.
	MemberResponses []json.RawMessage `json:"member_responses,omitempty"`
	// StepResults are a workflow run's step outputs, in order.
	StepResults []StepOutput `json:"step_results,omitempty"`
	// StepExecutorRuns are the runs a workflow's steps executed, each a
	// run_data object, kept as stored.
	StepExecutorRuns []json.RawMessage `json:"step_executor_runs,omitempty"`
	// StepRequirements are what a PAUSED workflow run waits for (Agno's
	// WorkflowRunOutput.step_requirements); PausedStepIndex and
	// PausedStepName name the top-level step it paused in, PauseKind is
	// "step" or "executor".
	StepRequirements []StepRequirement `json:"step_requirements,omitempty"`
	PausedStepIndex  *int              `json:"paused_step_index,omitempty"`
	PausedStepName   string            `json:"paused_step_name,omitempty"`
	PauseKind        string            `json:"pause_kind,omitempty"`
	// ErrorRequirements are the failed steps a PAUSED workflow run waits
	// for a decision on (HumanReview on_error pause).
	ErrorRequirements []ErrorRequirement `json:"error_requirements,omitempty"`

	Status    Status `json:"status,omitempty"`
	CreatedAt int64  `json:"created_at,omitempty"`
	UpdatedAt int64  `json:"updated_at,omitempty"`

	// Extra keeps the members of stored run_data that the fields above do not
	// hold (unknown ones, and the stored form of empty ones), so a run read
	// from storage is written back unchanged. A field set in Go wins over its
	// stored form.
	Extra map[string]json.RawMessage `json:"-"`
}

// ContentString returns Content as text (JSON for structured output).
func (o *Output) ContentString() string { return ContentText(o.Content) }

// ClearPause drops what a pause waits for (an agent's or team's
// requirements, a workflow's step and error requirements and paused step):
// a run that ended while paused (cancelled) waits for nothing.
func (o *Output) ClearPause() {
	o.Requirements, o.StepRequirements, o.ErrorRequirements = nil, nil, nil
	o.PausedStepIndex, o.PausedStepName, o.PauseKind = nil, "", ""
}

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

type output Output

// MarshalJSON writes the run in Agno's run_data layout, with Extra. A
// workflow run's input is written as the bare input value, as Agno's
// WorkflowRunOutput stores it, unless it carries media.
func (o Output) MarshalJSON() ([]byte, error) {
	// The runs an agent stores each turn skip reflection (appendjson.go).
	scratch := scratchBufs.Get().(*[]byte)
	b, ok := appendPlainOutput((*scratch)[:0], &o)
	var out []byte
	if ok {
		out = bytes.Clone(b)
	}
	if cap(b) <= 64<<10 { // a huge run's buffer is not kept
		*scratch = b[:0]
		scratchBufs.Put(scratch)
	}
	if ok {
		return out, nil
	}
	return o.marshalReflect()
}

// marshalReflect is MarshalJSON through encoding/json: every run, and the
// reference appendPlainOutput is tested against.
func (o Output) marshalReflect() ([]byte, error) {
	storedMember(o.Extra, "content", &o.Content)
	storedMember(o.Extra, "metadata", &o.Metadata)
	storedMember(o.Extra, "session_state", &o.SessionState)
	if o.Input != nil && !o.Input.bare && o.Type() == TypeWorkflow && o.Input.storedBare() {
		in := *o.Input
		in.bare = true
		if in.InputContent == nil && in.emptyObject {
			in.InputContent = map[string]any{} // stored as {}: not null
		}
		o.Input = &in
	}
	// v is pooled: it is the size of an Output and escapes to the heap
	// through lossless.Marshal, once for every run stored.
	v := outputJSONs.Get().(*outputJSON)
	*v = outputJSON{output: output(o),
		Input:             plainInput(o.Input),
		Metrics:           plainMetrics(o.Metrics),
		Messages:          plainList[model.Message, plainMessage](o.Messages, messageExtra),
		ReasoningMessages: plainList[model.Message, plainMessage](o.ReasoningMessages, messageExtra),
		Tools:             plainList[ToolExecution, toolExecution](o.Tools, func(t *ToolExecution) bool { return t.Extra != nil }),
		Events:            storedEvents(o.Events),
	}
	b, err := lossless.Marshal(v, o.Extra)
	*v = outputJSON{} // hold no run's values in the pool
	outputJSONs.Put(v)
	return b, err
}

var outputJSONs = sync.Pool{New: func() any { return new(outputJSON) }}

// scratchBufs hold appendPlainOutput's output until it is copied out at its
// size (a stored run keeps its bytes: no spare capacity).
var scratchBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// outputJSON is how an Output is written. Its lists are written through
// copies without JSON methods when no element has Extra: encoding/json scans
// the output of every MarshalJSON once more, and these lists are most of a
// run's bytes.
type outputJSON struct {
	output
	Input             any `json:"input,omitempty"`
	Metrics           any `json:"metrics,omitempty"`
	Messages          any `json:"messages,omitempty"`
	ReasoningMessages any `json:"reasoning_messages,omitempty"`
	Tools             any `json:"tools,omitempty"`
	Events            any `json:"events,omitempty"`
}

// plainList is ts as outputJSON holds it: nil when empty (omitted); the
// same elements seen as P, a type defined on T (same layout, no JSON
// methods), when extra says none has Extra; else ts itself, each element
// then writing its Extra. The view is not a copy: encoding only reads it.
func plainList[T, P any](ts []T, extra func(*T) bool) any {
	if len(ts) == 0 {
		return nil
	}
	for i := range ts {
		if extra(&ts[i]) {
			return ts
		}
	}
	return unsafe.Slice((*P)(unsafe.Pointer(unsafe.SliceData(ts))), len(ts))
}

// plainInput is in as outputJSON holds it: seen as input (no JSON
// methods, so encoding/json neither encodes it apart nor compacts and copies
// the result) when its MarshalJSON would only encode the fields.
func plainInput(in *Input) any {
	switch {
	case in == nil:
		return nil
	case in.bare || len(in.Extra) > 0:
		return in
	}
	return (*input)(in)
}

// plainMetrics is m as outputJSON holds it, seen without JSON methods when
// it has no Extra (see plainInput): as metricsJSON when its details are an
// agent run's (one "model" list, no Extra), else as metrics.
func plainMetrics(m *Metrics) any {
	switch {
	case m == nil:
		return nil
	case len(m.Extra) > 0:
		return m
	}
	list, ok := m.Details["model"]
	if len(m.Details) != 1 || !ok || len(list) == 0 {
		return (*metrics)(m)
	}
	for i := range list {
		if list[i].Extra != nil {
			return (*metrics)(m)
		}
	}
	v := &metricsJSON{metrics: (*metrics)(m)}
	v.Details.Model = unsafe.Slice((*modelMetrics)(unsafe.Pointer(unsafe.SliceData(list))), len(list))
	if m.Steps != nil {
		v.Steps = m.Steps
	}
	return v
}

// metricsJSON writes metrics whose details map has the one key "model" as a
// struct: encoding/json sorts a map's keys through reflection, and writes
// each ModelMetrics apart through its MarshalJSON. Steps is repeated so the
// members keep metrics' order.
type metricsJSON struct {
	*metrics
	Details struct {
		Model []modelMetrics `json:"model"`
	} `json:"details"`
	Steps any `json:"steps,omitempty"`
}

// storedEvents is es as outputJSON holds it: events with Extra are written
// through event, which writes it.
func storedEvents(es []Event) any {
	if len(es) == 0 {
		return nil
	}
	extra := false
	for i := range es {
		extra = extra || es[i].Extra != nil
	}
	if !extra {
		return es // Event has no JSON methods
	}
	out := make([]event, len(es))
	for i := range es {
		out[i] = event(es[i])
	}
	return out
}

// outputIn is how run_data is read: events through event, which keeps
// their Extra.
type outputIn struct {
	output
	Events []event `json:"events,omitempty"`
}

// UnmarshalJSON reads stored run_data, keeping what it does not model in Extra.
func (o *Output) UnmarshalJSON(b []byte) error {
	var v outputIn
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.output.Extra = extra
	exactMember(extra, "content", &v.output.Content)
	exactMember(extra, "metadata", &v.output.Metadata)
	exactMember(extra, "session_state", &v.output.SessionState)
	if v.Events != nil {
		v.output.Events = make([]Event, len(v.Events))
		for i := range v.Events {
			v.output.Events[i] = Event(v.Events[i])
		}
	}
	*o = Output(v.output)
	return nil
}
