package run

import (
	"encoding/json"

	"github.com/agentryhq/agentry/internal/lossless"
)

// EventType is an event's name as Agno spells it. Team events carry the same
// names prefixed "Team" (see TeamEvent).
type EventType string

// Agent run events (AgentOS wire names).
const (
	EventRunStarted              EventType = "RunStarted"
	EventRunContent              EventType = "RunContent"
	EventRunContentCompleted     EventType = "RunContentCompleted"
	EventRunIntermediateContent  EventType = "RunIntermediateContent"
	EventRunCompleted            EventType = "RunCompleted"
	EventRunError                EventType = "RunError"
	EventRunCancelled            EventType = "RunCancelled"
	EventRunPaused               EventType = "RunPaused"
	EventRunContinued            EventType = "RunContinued"
	EventToolCallStarted         EventType = "ToolCallStarted"
	EventToolCallCompleted       EventType = "ToolCallCompleted"
	EventToolCallError           EventType = "ToolCallError"
	EventReasoningStarted        EventType = "ReasoningStarted"
	EventReasoningStep           EventType = "ReasoningStep"
	EventReasoningContentDelta   EventType = "ReasoningContentDelta"
	EventReasoningCompleted      EventType = "ReasoningCompleted"
	EventMemoryUpdateStarted     EventType = "MemoryUpdateStarted"
	EventMemoryUpdateCompleted   EventType = "MemoryUpdateCompleted"
	EventSessionSummaryStarted   EventType = "SessionSummaryStarted"
	EventSessionSummaryCompleted EventType = "SessionSummaryCompleted"
	EventModelRequestStarted     EventType = "ModelRequestStarted"
	EventModelRequestCompleted   EventType = "ModelRequestCompleted"
	EventCustom                  EventType = "CustomEvent"

	// Hooks (agent.PreHook, agent.PostHook) and the second models that may
	// finish a run (parser_model, output_model).
	EventPreHookStarted               EventType = "PreHookStarted"
	EventPreHookCompleted             EventType = "PreHookCompleted"
	EventPostHookStarted              EventType = "PostHookStarted"
	EventPostHookCompleted            EventType = "PostHookCompleted"
	EventParserModelResponseStarted   EventType = "ParserModelResponseStarted"
	EventParserModelResponseCompleted EventType = "ParserModelResponseCompleted"
	EventOutputModelResponseStarted   EventType = "OutputModelResponseStarted"
	EventOutputModelResponseCompleted EventType = "OutputModelResponseCompleted"
)

// Workflow run events (Agno 3.0's WorkflowRunEvent names).
const (
	EventWorkflowStarted             EventType = "WorkflowStarted"
	EventWorkflowCompleted           EventType = "WorkflowCompleted"
	EventWorkflowCancelled           EventType = "WorkflowCancelled"
	EventWorkflowError               EventType = "WorkflowError"
	EventWorkflowPaused              EventType = "WorkflowPaused"
	EventStepStarted                 EventType = "StepStarted"
	EventStepCompleted               EventType = "StepCompleted"
	EventStepError                   EventType = "StepError"
	EventStepPaused                  EventType = "StepPaused"
	EventStepContinued               EventType = "StepContinued"
	EventStepExecutorPaused          EventType = "StepExecutorPaused"
	EventStepExecutorContinued       EventType = "StepExecutorContinued"
	EventStepOutputReview            EventType = "StepOutputReview"
	EventStepsExecutionStarted       EventType = "StepsExecutionStarted"
	EventStepsExecutionCompleted     EventType = "StepsExecutionCompleted"
	EventLoopExecutionStarted        EventType = "LoopExecutionStarted"
	EventLoopIterationStarted        EventType = "LoopIterationStarted"
	EventLoopIterationCompleted      EventType = "LoopIterationCompleted"
	EventLoopExecutionCompleted      EventType = "LoopExecutionCompleted"
	EventParallelExecutionStarted    EventType = "ParallelExecutionStarted"
	EventParallelExecutionCompleted  EventType = "ParallelExecutionCompleted"
	EventConditionExecutionStarted   EventType = "ConditionExecutionStarted"
	EventConditionExecutionCompleted EventType = "ConditionExecutionCompleted"
	EventConditionPaused             EventType = "ConditionPaused"
	EventRouterExecutionStarted      EventType = "RouterExecutionStarted"
	EventRouterExecutionCompleted    EventType = "RouterExecutionCompleted"
	EventRouterPaused                EventType = "RouterPaused"
)

// TeamEvent returns the team variant of an agent event name.
func TeamEvent(t EventType) EventType { return "Team" + t }

// ModelRequestUsage is what a ModelRequestCompleted event reports of the
// model call, in Agno's fields.
type ModelRequestUsage struct {
	InputTokens      int     `json:"input_tokens,omitempty"`
	OutputTokens     int     `json:"output_tokens,omitempty"`
	TotalTokens      int     `json:"total_tokens,omitempty"`
	TimeToFirstToken float64 `json:"time_to_first_token,omitempty"`
	ReasoningTokens  int     `json:"reasoning_tokens,omitempty"`
	CacheReadTokens  int     `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int     `json:"cache_write_tokens,omitempty"`
}

// Event is one streamed run event. It marshals to AgentOS's wire shape: the name
// in "event", integer created_at, null fields omitted, no top-level "data" key.
// A stored event's members Event does not model are kept in Extra (Output
// reads and writes them; Event itself encodes as a plain struct).
type Event struct {
	Event     EventType `json:"event"`
	CreatedAt int64     `json:"created_at"`

	AgentID      string `json:"agent_id,omitempty"`
	AgentName    string `json:"agent_name,omitempty"`
	TeamID       string `json:"team_id,omitempty"`
	TeamName     string `json:"team_name,omitempty"`
	WorkflowID   string `json:"workflow_id,omitempty"`
	WorkflowName string `json:"workflow_name,omitempty"`
	RunID        string `json:"run_id,omitempty"`
	ParentRunID  string `json:"parent_run_id,omitempty"`
	SessionID    string `json:"session_id,omitempty"`
	// Workflow step events: the step's name and 0-based position.
	StepName  string `json:"step_name,omitempty"`
	StepIndex *int   `json:"step_index,omitempty"`
	// StepID is the step's id within its workflow; ParentStepID the
	// enclosing primitive's; NestedDepth how deep the step is nested.
	StepID       string `json:"step_id,omitempty"`
	ParentStepID string `json:"parent_step_id,omitempty"`
	NestedDepth  int    `json:"nested_depth,omitempty"`
	// Loop events (iteration and max_iterations are in the embedded
	// TaskEvent, as for a team's task iterations).
	TotalIterations *int  `json:"total_iterations,omitempty"`
	ShouldContinue  *bool `json:"should_continue,omitempty"`
	// Parallel, Steps, Condition and Router events.
	ParallelStepCount *int         `json:"parallel_step_count,omitempty"`
	StepsCount        *int         `json:"steps_count,omitempty"`
	ExecutedSteps     *int         `json:"executed_steps,omitempty"`
	ConditionResult   *bool        `json:"condition_result,omitempty"`
	Branch            string       `json:"branch,omitempty"`
	SelectedSteps     []string     `json:"selected_steps,omitempty"`
	AvailableChoices  []string     `json:"available_choices,omitempty"`
	StepResults       []StepOutput `json:"step_results,omitempty"`
	// MemberResponses: TeamRunCompleted's member runs (run_data), as
	// Agno's event carries them.
	MemberResponses []json.RawMessage `json:"member_responses,omitempty"`
	// AllowMultipleSelections: a RouterPaused whose person may pick more
	// than one route.
	AllowMultipleSelections bool `json:"allow_multiple_selections,omitempty"`
	// LoopIterationCompleted: the iteration's step outputs; and
	// LoopExecutionCompleted: every iteration's, in order (Agno's names).
	IterationResults []StepOutput   `json:"iteration_results,omitempty"`
	AllResults       [][]StepOutput `json:"all_results,omitempty"`
	// StepPaused / WorkflowPaused.
	RequiresConfirmation bool              `json:"requires_confirmation,omitempty"`
	ConfirmationMessage  string            `json:"confirmation_message,omitempty"`
	RequiresUserInput    bool              `json:"requires_user_input,omitempty"`
	UserInputMessage     string            `json:"user_input_message,omitempty"`
	OutputReviewMessage  string            `json:"output_review_message,omitempty"`
	StepRequirements     []StepRequirement `json:"step_requirements,omitempty"`
	// ErrorRequirements: the failed steps a WorkflowPaused waits on (an
	// on_error pause), as the run's error_requirements; a step failing
	// again after a retry pauses with its retry_count one higher.
	ErrorRequirements []ErrorRequirement `json:"error_requirements,omitempty"`
	PausedStepIndex   *int               `json:"paused_step_index,omitempty"`
	PausedStepName    string             `json:"paused_step_name,omitempty"`
	// StepExecutorPaused / StepExecutorContinued: the step's agent or team
	// run that paused for a tool (or continues).
	ExecutorID           string        `json:"executor_id,omitempty"`
	ExecutorName         string        `json:"executor_name,omitempty"`
	ExecutorRunID        string        `json:"executor_run_id,omitempty"`
	ExecutorType         string        `json:"executor_type,omitempty"`
	ExecutorRequirements []Requirement `json:"executor_requirements,omitempty"`

	// RunStarted / ModelRequest*.
	Model         string `json:"model,omitempty"`
	ModelProvider string `json:"model_provider,omitempty"`

	// RunContent (a delta) and RunCompleted (the full content).
	// CustomEvent puts its payload here too.
	Content          any    `json:"content,omitempty"`
	ContentType      string `json:"content_type,omitempty"`
	ReasoningContent string `json:"reasoning_content,omitempty"`

	// Tool events carry one tool; RunPaused carries the tools waiting.
	Tool         *ToolExecution  `json:"tool,omitempty"`
	Tools        []ToolExecution `json:"tools,omitempty"`
	Requirements []Requirement   `json:"requirements,omitempty"`

	ReasoningStep  *ReasoningStep  `json:"reasoning_step,omitempty"`
	ReasoningSteps []ReasoningStep `json:"reasoning_steps,omitempty"`

	Metrics *Metrics `json:"metrics,omitempty"`
	// ModelRequestCompleted's token counts and time to first token; nil
	// on other events (a pointer: Event stays in its allocation size class).
	*ModelRequestUsage

	Images        []Media `json:"images,omitempty"`
	Videos        []Media `json:"videos,omitempty"`
	Audio         []Media `json:"audio,omitempty"`
	Files         []Media `json:"files,omitempty"`
	ResponseAudio *Media  `json:"response_audio,omitempty"`

	SessionState map[string]any `json:"session_state,omitempty"`

	// MemoryUpdateCompleted: the user's memories after the update (Agno's
	// UserMemory dicts). SessionSummaryCompleted: the session's summary
	// (Agno's SessionSummary dict).
	Memories       json.RawMessage `json:"memories,omitempty"`
	SessionSummary json.RawMessage `json:"session_summary,omitempty"`

	// PreHook* and PostHook*: the hook's name; PreHook* also carry the run's
	// input as the hook left it.
	PreHookName  string `json:"pre_hook_name,omitempty"`
	PostHookName string `json:"post_hook_name,omitempty"`
	RunInput     *Input `json:"run_input,omitempty"`

	// RunError. A rejected input or output (agent.InputCheckError,
	// agent.OutputCheckError) sets error_type input_check_error or
	// output_check_error, error_id to the check's trigger and additional_data.
	ErrorType string `json:"error_type,omitempty"`
	// Error is a WorkflowError's or StepError's message, as Agno's events
	// carry it (content carries it too).
	Error          string         `json:"error,omitempty"`
	ErrorID        string         `json:"error_id,omitempty"`
	AdditionalData map[string]any `json:"additional_data,omitempty"`
	// RunCancelled.
	Reason string `json:"reason,omitempty"`

	// TeamTask* events (a team in tasks mode); nil otherwise.
	*TaskEvent

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`
}

// Stored returns the event as a run stores it, for encoding: with Extra
// (the members another writer stored that Event does not model), which an
// Event itself does not write.
func (e *Event) Stored() json.Marshaler { return (*event)(e) }

// event is Event as Output stores it: Event itself has no JSON methods (a
// streamed event is encoded as is, once per delta), so a stored event's
// Extra is written and read through this type.
type event Event

// MarshalJSON writes the event with Extra.
func (e event) MarshalJSON() ([]byte, error) {
	type plain Event
	storedMember(e.Extra, "content", &e.Content)
	storedMember(e.Extra, "session_state", &e.SessionState)
	storedMember(e.Extra, "additional_data", &e.AdditionalData)
	return lossless.Marshal((*plain)(&e), e.Extra)
}

// UnmarshalJSON reads a stored event, keeping what it does not model in Extra.
func (e *event) UnmarshalJSON(b []byte) error {
	type plain Event
	var v plain
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	exactMember(extra, "content", &v.Content)
	exactMember(extra, "session_state", &v.SessionState)
	exactMember(extra, "additional_data", &v.AdditionalData)
	*e = event(v)
	return nil
}
