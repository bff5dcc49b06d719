package workflow

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
)

// stepResult is how one step ended; the stored run holds it as Agno's
// StepOutput (see stored).
type stepResult struct {
	StepName     string
	ExecutorType string
	ExecutorName string
	RunID        string
	Status       run.Status
	Content      any
	Metrics      *run.Metrics
	Err          error
}

// stored is the step's entry of the run's step_results, as Agno writes it.
func (r *stepResult) stored() run.StepOutput {
	ok := r.Err == nil && r.Status == run.StatusCompleted
	out := run.StepOutput{StepName: r.StepName, StepType: "Step", ExecutorType: r.ExecutorType, ExecutorName: r.ExecutorName,
		StepRunID: r.RunID, Content: r.Content, Metrics: r.Metrics, Success: &ok}
	if r.Err != nil {
		out.Error = r.Err.Error()
	}
	return out
}

// exec is one workflow run in progress.
type exec struct {
	w    *Workflow
	ctx  context.Context
	out  *run.Output
	emit func(run.Event) bool // nil for Run
	deps map[string]any
	// cancel ends the run, e.g. when a stream consumer stops reading.
	cancel context.CancelCauseFunc
	// failText is what events and the stored run say about the failed step.
	failText string
	// off and media are the run's offloader and media storage (storage.go).
	off   *offload.Offloader
	media media.Storage
}

func (w *Workflow) execute(ctx context.Context, input run.Input, o agent.CallOptions, emit func(run.Event) bool) (*run.Output, error) {
	if o.RunID == "" {
		o.RunID = uuid.NewString()
	}
	if o.SessionID == "" {
		o.SessionID = uuid.NewString()
	}
	in := input
	out := &run.Output{RunID: o.RunID, WorkflowID: w.cfg.ID, WorkflowName: w.cfg.Name, SessionID: o.SessionID,
		UserID: o.UserID, Input: &in, Status: run.StatusRunning, CreatedAt: time.Now().Unix()}
	if len(w.cfg.Metadata) > 0 || len(o.Metadata) > 0 {
		out.Metadata = make(map[string]any, len(w.cfg.Metadata)+len(o.Metadata))
		maps.Copy(out.Metadata, w.cfg.Metadata)
		maps.Copy(out.Metadata, o.Metadata)
	}
	// Registered before the RUNNING row is written: whoever reads that row
	// and cancels the run must find it (a cancel in between would else mark
	// the row CANCELLED while the run went on).
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(context.Canceled)
	ctx, unregister, err := run.DefaultRegistry().Begin(ctx, run.Registration{RunID: out.RunID, Component: w.Component(), UserID: out.UserID}, cancel)
	if err != nil {
		return nil, fmt.Errorf("workflow: %w", err)
	}
	defer unregister()
	x := &exec{w: w, ctx: ctx, out: out, emit: emit, deps: o.Dependencies, cancel: cancel}
	x.storage(o)
	if err := x.start(); err != nil {
		return nil, err
	}
	x.send(x.ev(run.EventWorkflowStarted))
	start := time.Now()
	content := in.Text()
	var results []stepResult
	var failure error
	for i, s := range w.cfg.Steps {
		if ctx.Err() != nil {
			break
		}
		res, err := x.step(i, s, content)
		results = append(results, res)
		if err != nil {
			failure = err
			break
		}
		content = run.ContentText(res.Content) // structured output travels as JSON
	}
	// Agno's WorkflowMetrics: the duration and each step's metrics by name
	// (Agno requires the steps key, even when empty).
	out.Metrics = &run.Metrics{Duration: time.Since(start).Seconds(), Steps: make(map[string]run.StepMetrics, len(results))}
	out.StepResults = make([]run.StepOutput, len(results))
	for i := range results {
		r := &results[i]
		out.StepResults[i] = r.stored()
		out.Metrics.Steps[r.StepName] = run.StepMetrics{StepName: r.StepName, ExecutorType: r.ExecutorType, ExecutorName: r.ExecutorName, Metrics: r.Metrics}
	}
	var runErr error
	var final run.Event
	switch {
	case ctx.Err() != nil:
		cause := context.Cause(ctx)
		out.Status = run.StatusCancelled
		out.Content, out.ContentType = fmt.Sprintf("run %s was cancelled: %s", out.RunID, cause), "str"
		runErr = fmt.Errorf("workflow: run %s cancelled: %w", out.RunID, cause)
		final = x.ev(run.EventWorkflowCancelled)
		final.Reason = cause.Error()
	case failure != nil:
		out.Status = run.StatusError
		out.Content, out.ContentType = x.failText, "str"
		runErr = fmt.Errorf("workflow: run %s failed: %w", out.RunID, failure)
		final = x.ev(run.EventWorkflowError)
		final.Content, final.ErrorType = out.Content, "StepError"
	default:
		out.Status = run.StatusCompleted
		out.Content, out.ContentType = content, "str"
		final = x.ev(run.EventWorkflowCompleted)
		final.Content, final.ContentType, final.Metrics = out.Content, out.ContentType, out.Metrics
	}
	persistErr := x.save()
	if persistErr != nil {
		// Never say the run completed (or failed, or was cancelled) when it
		// was not stored.
		final = x.ev(run.EventWorkflowError)
		final.Content, final.ErrorType = "storage error: the workflow run could not be saved", "StorageError"
	}
	x.send(final)
	return out, errors.Join(runErr, persistErr)
}

func (x *exec) ev(t run.EventType) run.Event {
	return run.Event{Event: t, CreatedAt: time.Now().Unix(), WorkflowID: x.out.WorkflowID, WorkflowName: x.out.WorkflowName,
		RunID: x.out.RunID, SessionID: x.out.SessionID}
}

// send delivers e to a stream consumer; one that stops reading cancels the run.
func (x *exec) send(e run.Event) {
	if x.emit != nil && !x.emit(e) {
		x.cancel(errStreamStopped)
	}
}

// step runs one step with the previous content as its input.
func (x *exec) step(i int, s Step, input string) (stepResult, error) {
	r, c := s.Runner, s.Runner.Component()
	res := stepResult{StepName: s.Name, RunID: uuid.NewString(), ExecutorType: string(c.Type), ExecutorName: cmp.Or(c.Name, c.ID)}
	started := x.ev(run.EventStepStarted)
	started.StepName, started.StepIndex = s.Name, &i
	x.send(started)
	opts := []agent.RunOption{agent.WithRunID(res.RunID), agent.WithSessionID(x.out.SessionID), agent.WithUserID(x.out.UserID),
		agent.WithParentRunID(x.out.RunID), x.stepStorage()}
	if x.deps != nil {
		opts = append(opts, agent.WithDependencies(x.deps))
	}
	var err error
	if x.emit == nil {
		var so *run.Output
		so, err = r.Run(x.ctx, run.TextInput(input), opts...)
		if so != nil {
			res.Status, res.Content, res.Metrics = so.Status, so.Content, so.Metrics
			if !errors.Is(err, agent.ErrStorage) {
				err = nil
			}
		}
	} else {
		err = x.forward(r, input, opts, &res)
	}
	if err == nil && res.Status != run.StatusCompleted {
		err = fmt.Errorf("step %s ended %s: %v", s.Name, res.Status, res.Content)
		if res.Status == run.StatusPaused {
			err = fmt.Errorf("step %s paused; workflows cannot continue paused steps yet", s.Name)
		}
	} else if err != nil {
		err = fmt.Errorf("step %s: %w", s.Name, err)
	}
	if err != nil {
		x.failText = err.Error()
		if errors.Is(err, agent.ErrStorage) {
			// The storage error's own text may name the database's host and
			// user: events and the stored run get this, the caller the error.
			x.failText = fmt.Sprintf("step %s: storage error: its session could not be read or its run could not be saved", s.Name)
			res.Status, res.Content = run.StatusError, x.failText
		}
		// The stored step result says what the events say (never the storage
		// error's own text).
		res.Err = errors.New(x.failText)
		if x.ctx.Err() == nil {
			e := x.ev(run.EventStepError)
			e.StepName, e.StepIndex, e.Content = s.Name, &i, x.failText
			x.send(e)
		}
		return res, err
	}
	e := x.ev(run.EventStepCompleted)
	e.StepName, e.StepIndex, e.Content, e.ContentType = s.Name, &i, res.Content, "str"
	x.send(e)
	return res, nil
}

// forward streams a step, passing its events on unchanged, and reads the
// step's outcome from its terminal event, named in its runner's vocabulary
// (the last such event wins: the step's own comes after any of a run nested
// in it).
func (x *exec) forward(r agent.Runner, input string, opts []agent.RunOption, res *stepResult) error {
	c := r.Component()
	completed, failed := c.EventName(run.EventRunCompleted), c.EventName(run.EventRunError)
	cancelled, paused := c.EventName(run.EventRunCancelled), c.EventName(run.EventRunPaused)
	for ev, err := range r.Stream(x.ctx, run.TextInput(input), opts...) {
		if err != nil {
			return err
		}
		switch ev.Event {
		case completed:
			res.Status, res.Content, res.Metrics = run.StatusCompleted, ev.Content, ev.Metrics
		case failed:
			res.Status, res.Content = run.StatusError, ev.Content
		case cancelled:
			res.Status, res.Content = run.StatusCancelled, ev.Reason
		case paused:
			res.Status = run.StatusPaused
		}
		if !x.emit(ev) {
			x.cancel(errStreamStopped)
			return context.Cause(x.ctx)
		}
	}
	if res.Status == "" {
		return errors.New("the step ended without a final event")
	}
	return nil
}

// start writes the session (if new) and the RUNNING run row, so steps find
// their session and readers see the run while it executes. It writes even
// when the run is already cancelled (like an agent's run): the steps loop
// then ends it CANCELLED without starting a step, and whoever cancelled it
// finds it stored so, not missing or left RUNNING by an earlier writer.
func (x *exec) start() error {
	d := x.w.cfg.DB
	if d == nil {
		return nil
	}
	ctx := context.WithoutCancel(x.ctx)
	if _, err := d.GetSession(ctx, x.out.SessionID); errors.Is(err, db.ErrNotFound) {
		_, err = d.UpsertSession(ctx, &db.Session{SessionID: x.out.SessionID, SessionType: run.TypeWorkflow,
			WorkflowID: x.w.cfg.ID, UserID: x.out.UserID, WorkflowData: x.w.data})
		if err != nil {
			return fmt.Errorf("workflow: %w: create session %s: %w", agent.ErrStorage, x.out.SessionID, err)
		}
	} else if err != nil {
		return fmt.Errorf("workflow: %w: load session %s: %w", agent.ErrStorage, x.out.SessionID, err)
	}
	if err := x.upsert(ctx, d); err != nil {
		return fmt.Errorf("workflow: %w: store run %s: %w", agent.ErrStorage, x.out.RunID, err)
	}
	return nil
}

// save stores the finished run with a context that is not cancelled.
func (x *exec) save() error {
	d := x.w.cfg.DB
	if d == nil {
		return nil
	}
	x.out.UpdatedAt = time.Now().Unix()
	if err := x.upsert(context.WithoutCancel(x.ctx), d); err != nil {
		return fmt.Errorf("workflow: %w: save run %s: %w", agent.ErrStorage, x.out.RunID, err)
	}
	return nil
}

func (x *exec) upsert(ctx context.Context, d *db.DB) error {
	out, mediaErr := x.storedForm(ctx)
	row, err := db.RunFromOutput(out)
	if err == nil {
		_, err = d.UpsertRun(ctx, row)
	}
	return errors.Join(mediaErr, err)
}
