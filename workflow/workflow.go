package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
)

var _ agent.Runner = (*Workflow)(nil)

// Config configures a Workflow. Steps is required.
type Config struct {
	// ID identifies the workflow (workflow_id). Default: Name lower-cased with
	// spaces as dashes; with no Name, a random UUID.
	ID          string
	Name        string
	Description string
	Steps       []Step
	// DB stores the workflow's sessions and runs; nil means the workflow run
	// is not persisted (its steps still store theirs in their own DBs).
	DB *db.DB
	// Metadata is merged into every workflow run's metadata over the
	// call's (agent.WithMetadata), recursively, this value winning a
	// conflict, as an agent's and a team's Config.Metadata.
	Metadata map[string]any
	// OffloadToolResults and MediaStorage are as agent.Config's, for the
	// steps whose own configuration leaves them unset: their oversized
	// tool results are offloaded and their media stored as references.
	// MediaStorage also receives the workflow run's own media (its input),
	// which its stored run keeps as media_reference objects.
	// OffloadToolResults needs DB.
	OffloadToolResults *offload.Config
	MediaStorage       media.Storage
}

// Workflow runs its steps in order. It is safe for concurrent use.
type Workflow struct {
	cfg  Config
	data json.RawMessage // workflow_data of its sessions
	// shape fingerprints the step tree (journal.Shape).
	shape  string
	off    *offload.Offloader
	timers timers
}

// New validates cfg and returns a Workflow.
func New(cfg Config) (*Workflow, error) {
	if len(cfg.Steps) == 0 {
		return nil, errors.New("workflow: Config.Steps is empty; a workflow needs at least one step")
	}
	steps, err := prepare(cfg.Steps, "Steps", 0)
	if err != nil {
		return nil, fmt.Errorf("workflow: %w", err)
	}
	cfg.Steps = steps
	cfg.ID = agent.DefaultID(cfg.ID, cfg.Name)
	off, err := newOffloader(&cfg)
	if err != nil {
		return nil, err
	}
	w := &Workflow{cfg: cfg, off: off, shape: shapeOf(cfg.Steps)}
	data := map[string]any{"workflow_id": cfg.ID}
	if cfg.Name != "" {
		data["name"] = cfg.Name
	}
	w.data, _ = json.Marshal(data)
	return w, nil
}

// ID returns the workflow id (workflow_id).
func (w *Workflow) ID() string { return w.cfg.ID }

// Component returns the identity the workflow's runs are stamped with.
func (w *Workflow) Component() run.Component {
	return run.Component{Type: run.TypeWorkflow, ID: w.cfg.ID, Name: w.cfg.Name}
}

// ComponentData returns the workflow_data its runs write to their session's
// row. The caller must not modify it.
func (w *Workflow) ComponentData() json.RawMessage { return w.data }

// Name returns the workflow name.
func (w *Workflow) Name() string { return w.cfg.Name }

// Config returns a copy of the configuration (after defaults).
func (w *Workflow) Config() Config { return w.cfg }

// Metadata returns Config.Metadata, merged into every run's metadata.
func (w *Workflow) Metadata() map[string]any { return w.cfg.Metadata }

// DB returns the workflow's database, nil when its runs are not persisted.
func (w *Workflow) DB() *db.DB { return w.cfg.DB }

// Steps returns the steps in order (names defaulted).
func (w *Workflow) Steps() []Step { return w.cfg.Steps }

// Run executes the steps in order and returns the workflow run: content is
// the last step's content. Like agent.Agent.Run, err is non-nil when the run
// ended in ERROR or CANCELLED or could not be stored. Of the options, the
// session, user, run and parent run ids, session state, metadata,
// dependencies (passed to every step), journal, storage defaults and event
// function apply; the others (WithOutputSchema, WithKnowledgeFilters,
// WithAddHistoryToContext, WithMemberHistory, WithTools, WithRequirements)
// are refused with an *agent.UnsupportedOptionError before anything runs.
func (w *Workflow) Run(ctx context.Context, input run.Input, opts ...agent.RunOption) (*run.Output, error) {
	o := newCall(opts)
	if err := w.refuse(o); err != nil {
		return nil, err
	}
	return w.execute(ctx, w.newOutput(input, o), nil, o, nil)
}

// CheckOptions returns the error Run would refuse opts with, if any
// (agent.OptionChecker).
func (w *Workflow) CheckOptions(opts ...agent.RunOption) error {
	return w.refuse(agent.ResolveOptions(opts...))
}

// refuse returns the error of a run given an option the workflow cannot
// honour (nil when it can honour them all). Agno's Workflow.run takes
// neither an output schema, knowledge filters nor add_history_to_context:
// those are its agents' and teams' own configuration. Resolutions of tool
// requirements go to ContinueRun as step answers.
func (w *Workflow) refuse(o agent.CallOptions) error {
	unsupported := func(option, reason string) error {
		return &agent.UnsupportedOptionError{Runner: w.Component(), Option: option, Reason: reason}
	}
	switch {
	case len(o.OutputSchema) > 0:
		return unsupported("WithOutputSchema", "a workflow's content is its last step's; give that step's agent or team the schema")
	case o.KnowledgeFilters != nil:
		return unsupported("WithKnowledgeFilters", "a workflow searches no knowledge; set KnowledgeFilters on its agents")
	case o.AddHistoryToContext != nil:
		return unsupported("WithAddHistoryToContext", "a workflow has no model context; set AddHistoryToContext on its agents and teams")
	case o.MemberHistory:
		return unsupported("WithMemberHistory", "a workflow has no model context; a team gives it to its member agents and teams")
	case o.Tools != nil:
		return unsupported("WithTools", "resolve a paused step's tools with ContinueRun's answers (executor_requirements)")
	case o.Requirements != nil:
		return unsupported("WithRequirements", "resolve a paused step's requirements with ContinueRun's answers (executor_requirements)")
	}
	return nil
}

func newCall(opts []agent.RunOption) agent.CallOptions {
	o := agent.ResolveOptions(opts...)
	if o.RunID == "" {
		o.RunID = uuid.NewString()
	}
	if o.SessionID == "" {
		o.SessionID = uuid.NewString()
	}
	return o
}

// Stream executes the workflow and yields WorkflowStarted, then for each step
// StepStarted, the step's own events (its runner's, unchanged) and
// StepCompleted (or StepError), then WorkflowCompleted, WorkflowError or
// WorkflowCancelled. Breaking out of the loop cancels the run. The error is
// non-nil only when the run cannot start (its session cannot be read or
// written: the only value yielded) or could not be stored (the run then
// ends with a WorkflowError of error_type StorageError, and the error,
// wrapping agent.ErrStorage, is the last value). The loop body runs on the
// goroutine that ranges, for every event, those of a Parallel's branches
// too (they wait while it runs); a panic in it cancels the run and goes on
// to the range statement.
func (w *Workflow) Stream(ctx context.Context, input run.Input, opts ...agent.RunOption) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		o := newCall(opts)
		if err := w.refuse(o); err != nil {
			yield(run.Event{}, err)
			return
		}
		w.streamExec(ctx, w.newOutput(input, o), nil, o, yield)
	}
}

func (w *Workflow) streamExec(ctx context.Context, out *run.Output, j *journal, o agent.CallOptions, yield func(run.Event, error) bool) {
	live := true
	emit := func(e run.Event) bool {
		if live && !yield(e, nil) {
			live = false
		}
		return live
	}
	res, err := w.execute(ctx, out, j, o, emit)
	if err != nil && live && (res == nil || errors.Is(err, agent.ErrStorage)) {
		yield(run.Event{}, err)
	}
}

// CancelRun cancels a run of this workflow in progress in this process,
// whoever started it, with the step running it. It reports whether the run
// was found.
func (w *Workflow) CancelRun(runID string) bool {
	return run.CancelRun(run.DefaultRegistry(), w.Component(), runID, errCancelRequested)
}

var (
	errCancelRequested = errors.New("cancelled by CancelRun")
	errStreamStopped   = errors.New("the stream consumer stopped reading")
)
