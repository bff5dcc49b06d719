package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
)

// RunOption sets a per-call knob of Run, Stream and ContinueRun.
type RunOption func(*runOptions)

type runOptions struct {
	sessionID  string
	newSession bool // sessionID was just generated: nothing is stored under it
	userID     string
	runID      string
	// more holds the options few runs set, allocated by the first of them
	// (nil: none set): a run's state holds its options, and a smaller state
	// is less to allocate and clear on every run.
	more *moreOptions
}

// moreOptions are the options few runs set (see runOptions.more).
type moreOptions struct {
	parentRunID    string
	workflowStepID string
	sessionState   map[string]any
	metadata       map[string]any
	dependencies   map[string]any
	outputSchema   json.RawMessage
	schemaName     string
	tools          []run.ToolExecution
	requirements   []run.Requirement
	journal        run.Journal
	attempt        int
	eventFunc      func(run.Event)
	offloader      *offload.Offloader
	mediaStorage   media.Storage
	// knowledgeFilters and addHistory are WithKnowledgeFilters and
	// WithAddHistoryToContext (addHistory nil: Config.AddHistoryToContext).
	knowledgeFilters map[string]any
	addHistory       *bool
	memberHistory    bool // WithMemberHistory
}

// set returns the options few runs set, for an option to write.
func (o *runOptions) set() *moreOptions {
	if o.more == nil {
		o.more = &moreOptions{}
	}
	return o.more
}

// get returns the options few runs set, for reading (zero when none is).
func (o *runOptions) get() moreOptions {
	if o.more == nil {
		return moreOptions{}
	}
	return *o.more
}

// journal is WithJournal's journal (nil: the run is not durable).
func (o *runOptions) journal() run.Journal {
	if o.more == nil {
		return nil
	}
	return o.more.journal
}

// WithSessionID runs in this session (default Config.SessionID; empty means a
// new session with a random id).
func WithSessionID(id string) RunOption {
	return func(o *runOptions) { o.sessionID, o.newSession = id, false }
}

// WithNewSession runs in a new session whose id the caller just generated
// (a random UUID): no stored session can have it, so the run does not read
// the session or its history first. Use WithSessionID for any id a client
// chose or that may have been stored before. A continue refuses it (an
// *UnsupportedOptionError): a continued run is in its paused run's session.
func WithNewSession(id string) RunOption {
	return func(o *runOptions) { o.sessionID, o.newSession = id, true }
}

// WithUserID sets the run's user (default Config.UserID).
func WithUserID(id string) RunOption { return func(o *runOptions) { o.userID = id } }

// WithRunID sets the run id instead of a random UUID.
func WithRunID(id string) RunOption { return func(o *runOptions) { o.runID = id } }

// WithParentRunID marks the run as a member run of a team or workflow run;
// such runs never feed history.
func WithParentRunID(id string) RunOption { return func(o *runOptions) { o.set().parentRunID = id } }

// WithWorkflowStepID records on the run (run.Output.WorkflowStepID) the id
// of the workflow step executing it, as Agno's workflow_step_id; the
// workflow package passes it to its steps' runs.
func WithWorkflowStepID(id string) RunOption {
	return func(o *runOptions) { o.set().workflowStepID = id }
}

// WithMemberHistory makes the history a run adds to its context (when it
// adds one) its component's earlier runs in the session including those
// that ran as member runs (parent_run_id set): a team member's history is
// its own runs in the team's session, which are member runs of the team's
// runs, as Agno gives a member with add_history_to_context. Without it the
// history holds runs with no parent only. The team package passes it to
// its members.
func WithMemberHistory() RunOption { return func(o *runOptions) { o.set().memberHistory = true } }

// WithSessionState merges state into the session state (top-level keys
// replace stored ones) and stores the result with the session.
func WithSessionState(state map[string]any) RunOption {
	return func(o *runOptions) { o.set().sessionState = state }
}

// WithMetadata adds metadata to the run. Config.Metadata is merged over it,
// into nested objects too, the agent's value winning a conflict (Agno's
// precedence); a continue's metadata is merged over the paused run's.
func WithMetadata(md map[string]any) RunOption { return func(o *runOptions) { o.set().metadata = md } }

// WithDependencies makes values available to tools through FromContext.
func WithDependencies(deps map[string]any) RunOption {
	return func(o *runOptions) { o.set().dependencies = deps }
}

// WithOutputSchema asks for structured output with this JSON Schema for this
// run only (AgentOS's output_schema form field).
func WithOutputSchema(schema json.RawMessage, name string) RunOption {
	return func(o *runOptions) { m := o.set(); m.outputSchema, m.schemaName = schema, name }
}

// WithKnowledgeFilters restricts this run's knowledge searches (the
// search_knowledge_base tool and AddKnowledgeToContext) by metadata, over
// Config.KnowledgeFilters: a key given here replaces the agent's value for
// that key, the agent's other keys still apply (Agno's run-level
// knowledge_filters). An agent without Config.Knowledge does not search: it
// refuses the run (an *UnsupportedOptionError), unless it is composed into
// another component (Config.Component), which honours or refuses them (a
// team gives them to its members).
func WithKnowledgeFilters(filters map[string]any) RunOption {
	return func(o *runOptions) { o.set().knowledgeFilters = filters }
}

// WithAddHistoryToContext overrides Config.AddHistoryToContext for this run:
// true adds the session's last Config.NumHistoryRuns runs to the model's
// context, false adds none (Agno's run-level add_history_to_context). An
// agent without Config.DB has no history to add: it refuses true (an
// *UnsupportedOptionError).
func WithAddHistoryToContext(on bool) RunOption {
	return func(o *runOptions) { o.set().addHistory = &on }
}

// WithTools supplies resolved tool executions to ContinueRun, matched by
// tool_call_id: Confirmed/ConfirmationNote for confirmations, ToolArgs and
// Answered for user input, Result for external execution (AgentOS's "tools").
// Run and Stream, which start a run with no paused tools, refuse it (an
// *UnsupportedOptionError).
func WithTools(tools []run.ToolExecution) RunOption {
	return func(o *runOptions) { o.set().tools = tools }
}

// WithRequirements supplies resolved requirements to ContinueRun (AgentOS's
// "requirements"); each requirement's ToolExecution is applied as in
// WithTools. Run and Stream refuse it, as WithTools.
func WithRequirements(reqs []run.Requirement) RunOption {
	return func(o *runOptions) { o.set().requirements = reqs }
}

// WithJournal makes the run durable: each model call and each tool call is
// a step of j, recorded by this attempt of the run (the job's attempt, from
// 1). A run started again with the same run id and input replays the
// recorded steps instead of calling the model or the tool, and continues
// from the first unrecorded one. Tools get a stable run.IdempotencyKey per
// (run, tool call). An interrupted call of a tool.Definition.NonIdempotent
// tool pauses the run with a confirmation requirement. When a newer attempt
// has taken the run over (run.ErrFenced) the run ends without saving its row.
func WithJournal(j run.Journal, attempt int) RunOption {
	return func(o *runOptions) { m := o.set(); m.journal, m.attempt = j, attempt }
}

// RunContext describes the run a tool is called in.
type RunContext struct {
	AgentID      string
	RunID        string
	SessionID    string
	UserID       string
	Dependencies map[string]any
	// Offloader and MediaStorage are the run's (its agent's own or those
	// passed with WithStorageDefaults), for the runs it starts (a team's
	// members); nil when off.
	Offloader    *offload.Offloader
	MediaStorage media.Storage
	// Journal and Attempt are the run's WithJournal (nil when the run is
	// not durable), for the runs it starts: a team journals its members'
	// steps in the same journal.
	Journal run.Journal
	Attempt int
}

type runContextKey struct{}

// FromContext returns the run a tool call belongs to.
func FromContext(ctx context.Context) (RunContext, bool) {
	rc, ok := ctx.Value(runContextKey{}).(*RunContext)
	if !ok {
		return RunContext{}, false
	}
	return *rc, true
}

// ErrUnsupportedOption is wrapped by the error of a run given a RunOption
// its runner cannot honour (an *UnsupportedOptionError names it): the
// runner refuses the run before doing anything rather than run it without
// the option.
var ErrUnsupportedOption = errors.New("run option not supported")

// UnsupportedOptionError is the error of a run refused for one of its
// options; it wraps ErrUnsupportedOption.
type UnsupportedOptionError struct {
	// Runner is the component that refused the run.
	Runner run.Component
	// Option is the option's function, as WithKnowledgeFilters.
	Option string
	// Reason says why the runner cannot honour it.
	Reason string
}

func (e *UnsupportedOptionError) Error() string {
	return fmt.Sprintf("%s: %s %s does not support %s: %s", ErrUnsupportedOption, e.Runner.Type, e.Runner.ID, e.Option, e.Reason)
}

// Unwrap returns ErrUnsupportedOption.
func (e *UnsupportedOptionError) Unwrap() error { return ErrUnsupportedOption }

// CallOptions are RunOptions resolved. Packages that run agents on their
// caller's behalf (team, workflow) read them to keep the same session, user
// and run ids, to hand HITL resolutions (Tools, Requirements) on to the
// member or step they continue, and to honour or refuse (with an
// *UnsupportedOptionError) every other option set.
type CallOptions struct {
	SessionID, UserID, RunID, ParentRunID string
	// WorkflowStepID is WithWorkflowStepID's.
	WorkflowStepID                       string
	SessionState, Metadata, Dependencies map[string]any
	Tools                                []run.ToolExecution
	Requirements                         []run.Requirement
	// Journal and Attempt are WithJournal's (a workflow journals its steps
	// and hands both on to them).
	Journal run.Journal
	Attempt int
	// Offloader and MediaStorage are those of WithStorageDefaults.
	Offloader    *offload.Offloader
	MediaStorage media.Storage
	// OutputSchema and SchemaName are WithOutputSchema's.
	OutputSchema json.RawMessage
	SchemaName   string
	// KnowledgeFilters are WithKnowledgeFilters' (nil when not given).
	KnowledgeFilters map[string]any
	// AddHistoryToContext is WithAddHistoryToContext's (nil when not given).
	AddHistoryToContext *bool
	// MemberHistory is WithMemberHistory's.
	MemberHistory bool
	// EventFunc is WithEventFunc's.
	EventFunc func(run.Event)
}

// ResolveOptions applies opts and returns what they set.
func ResolveOptions(opts ...RunOption) CallOptions {
	var ro runOptions
	for _, fn := range opts {
		fn(&ro)
	}
	o := ro.get()
	return CallOptions{SessionID: ro.sessionID, UserID: ro.userID, RunID: ro.runID, ParentRunID: o.parentRunID, WorkflowStepID: o.workflowStepID,
		SessionState: o.sessionState, Metadata: o.metadata, Dependencies: o.dependencies,
		Tools: o.tools, Requirements: o.requirements, Journal: o.journal, Attempt: o.attempt,
		Offloader: o.offloader, MediaStorage: o.mediaStorage,
		OutputSchema: o.outputSchema, SchemaName: o.schemaName, KnowledgeFilters: o.knowledgeFilters,
		AddHistoryToContext: o.addHistory, MemberHistory: o.memberHistory, EventFunc: o.eventFunc}
}
