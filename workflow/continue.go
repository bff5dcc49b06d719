package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// Errors of ContinueRun, usable with errors.Is.
var (
	// ErrNotPaused: the run exists but does not wait for anyone.
	ErrNotPaused = errors.New("workflow: the run is not paused")
	// ErrUnresolved: an answer is missing or does not fit its requirement.
	ErrUnresolved = errors.New("workflow: a step requirement is not resolved")
	// ErrNoDB: continuing needs the run stored.
	ErrNoDB = errors.New("workflow: the workflow has no DB; paused runs cannot be continued")
	// ErrStepsChanged: the run paused in another tree of steps (the
	// workflow's steps were changed since); its journal cannot be replayed.
	ErrStepsChanged = errors.New("workflow: the workflow's steps changed since the run paused")
)

// ContinueRun continues the paused run runID (read from the workflow's DB in
// the context's user scope: another user's run is db.ErrNotFound) with the
// answers to its step requirements, matched by step_id (and
// is_post_execution): Confirmed true or false (with RejectionFeedback),
// UserInput (validated against the schema), SelectedChoices for a router,
// EditedOutput for an output review. Steps that ran before the pause are
// not run again. The run ends, or pauses again, as Run does.
func (w *Workflow) ContinueRun(ctx context.Context, runID string, answers []run.StepRequirement, opts ...agent.RunOption) (*run.Output, error) {
	out, j, o, err := w.resume(ctx, runID, answers, opts)
	if err != nil {
		return nil, err
	}
	return w.execute(ctx, out, j, o, nil)
}

// ContinueStream is ContinueRun, streamed as Stream is.
func (w *Workflow) ContinueStream(ctx context.Context, runID string, answers []run.StepRequirement, opts ...agent.RunOption) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		out, j, o, err := w.resume(ctx, runID, answers, opts)
		if err != nil {
			yield(run.Event{}, err)
			return
		}
		w.streamExec(ctx, out, j, o, yield)
	}
}

// LoadPaused reads the paused run runID with its journal.
func (w *Workflow) loadPaused(ctx context.Context, runID string) (*run.Output, *journal, error) {
	if w.cfg.DB == nil {
		return nil, nil, ErrNoDB
	}
	row, err := w.cfg.DB.GetRun(ctx, runID)
	if err != nil {
		return nil, nil, err
	}
	if !row.ProducedBy(w.Component()) {
		return nil, nil, fmt.Errorf("workflow: run %s: %w", runID, db.ErrNotFound)
	}
	if row.Status != run.StatusPaused {
		return nil, nil, fmt.Errorf("%w: run %s is %s", ErrNotPaused, runID, row.Status)
	}
	out, err := row.Output()
	if err != nil {
		return nil, nil, err
	}
	j := &journal{}
	if raw, ok := out.Extra[journalKey]; ok {
		if err := json.Unmarshal(raw, j); err != nil {
			return nil, nil, fmt.Errorf("workflow: run %s: its journal cannot be read: %w", runID, err)
		}
		j.loaded = raw
		delete(out.Extra, journalKey)
	}
	if j.Shape != "" && j.Shape != w.shape {
		return nil, nil, fmt.Errorf("%w: run %s cannot be continued by this version of workflow %s", ErrStepsChanged, runID, w.cfg.ID)
	}
	return out, j, nil
}

func (w *Workflow) resume(ctx context.Context, runID string, answers []run.StepRequirement, opts []agent.RunOption) (*run.Output, *journal, agent.CallOptions, error) {
	o := agent.ResolveOptions(opts...)
	if err := w.refuse(o); err != nil {
		return nil, nil, o, err
	}
	out, j, err := w.loadPaused(ctx, runID)
	if err != nil {
		return nil, nil, o, err
	}
	if err := agent.CheckContinuedIDs(w.Component(), o, out); err != nil {
		return nil, nil, o, err
	}
	for _, req := range out.StepRequirements {
		if timedOut(req, j) {
			// Its timeout applied while another requirement waited: its
			// OnTimeout stands (its approval expired), whatever is sent.
			continue
		}
		i := slices.IndexFunc(answers, func(a run.StepRequirement) bool {
			return a.StepID == req.StepID && a.IsPostExecution == req.IsPostExecution
		})
		if i < 0 {
			return nil, nil, o, fmt.Errorf("%w: step %s (%s) has no answer", ErrUnresolved, req.StepName, req.StepID)
		}
		a, err := applyAnswer(req, answers[i])
		if err != nil {
			return nil, nil, o, err
		}
		j.setAnswer(a)
		j.answered = append(j.answered, a)
	}
	for _, e := range out.ErrorRequirements {
		i := slices.IndexFunc(answers, func(a run.StepRequirement) bool {
			return a.StepID == e.StepID && (a.Decision != "" || a.Confirmed != nil) && !a.IsPostExecution
		})
		if i < 0 {
			return nil, nil, o, fmt.Errorf("%w: step %s (%s) failed and has no decision (retry, skip or cancel)", ErrUnresolved, e.StepName, e.StepID)
		}
		d, err := errorDecision(e, answers[i])
		if err != nil {
			return nil, nil, o, err
		}
		j.decide(errorKey(e.StepID), d)
		f := d != DecisionRetry
		j.answered = append(j.answered, run.StepRequirement{StepID: errorKey(e.StepID), StepName: e.StepName, RetryCount: e.RetryCount,
			Confirmed: ptr(!f), Decision: d})
	}
	w.prepareResume(out)
	o.SessionID, o.UserID, o.RunID = out.SessionID, out.UserID, out.RunID
	return out, j, o, nil
}

func ptr[T any](v T) *T { return &v }

// timedOut reports whether the paused run's requirement req was answered
// by its timeout (expire) while another requirement of the run still waits.
func timedOut(req run.StepRequirement, j *journal) bool {
	if req.RequiresExecutorInput || req.TimeoutAt == "" || !req.Resolved() {
		return false
	}
	_, ok := j.answer(req.StepID, req.IsPostExecution)
	return ok
}

// errorDecision reads the decision on a failed step: decision retry, skip
// or cancel, or confirmed true (retry) or false (skip).
func errorDecision(e run.ErrorRequirement, a run.StepRequirement) (string, error) {
	switch a.Decision {
	case DecisionRetry, DecisionSkip, DecisionCancel:
		return a.Decision, nil
	case "":
		if *a.Confirmed {
			return DecisionRetry, nil
		}
		return DecisionSkip, nil
	}
	return "", fmt.Errorf("%w: step %s: decision %q: use retry, skip or cancel", ErrUnresolved, e.StepName, a.Decision)
}

func (w *Workflow) prepareResume(out *run.Output) {
	out.Status, out.StepRequirements, out.PausedStepIndex, out.PausedStepName, out.PauseKind = run.StatusRunning, nil, nil, "", ""
	out.ErrorRequirements = nil
	out.StepResults, out.Content, out.ContentType = nil, nil, ""
}

// applyAnswer copies the caller's answer into the stored requirement,
// checking it fits.
func applyAnswer(req, a run.StepRequirement) (run.StepRequirement, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: step %s: %s", ErrUnresolved, req.StepName, fmt.Sprintf(format, args...))
	}
	req.Confirmed, req.RejectionFeedback = a.Confirmed, a.RejectionFeedback
	rejected := a.Confirmed != nil && !*a.Confirmed
	switch {
	case req.RequiresExecutorInput:
		// Each of the agent's (or team's) requirements, answered in place
		// as its own continue takes them, matched by id or tool call.
		for k := range req.ExecutorRequirements {
			q := &req.ExecutorRequirements[k]
			m := slices.IndexFunc(a.ExecutorRequirements, func(x run.Requirement) bool {
				return x.ID != "" && x.ID == q.ID || x.ToolExecution != nil && q.ToolExecution != nil && x.ToolExecution.ToolCallID == q.ToolExecution.ToolCallID
			})
			if m < 0 || q.ToolExecution == nil || a.ExecutorRequirements[m].ToolExecution == nil {
				return req, bad("executor requirement %s has no answer (its tool_execution resolved)", q.ID)
			}
			t, at := *q.ToolExecution, a.ExecutorRequirements[m].ToolExecution
			if at.Confirmed != nil {
				t.Confirmed, t.ConfirmationNote = at.Confirmed, at.ConfirmationNote
			}
			if at.Answered != nil {
				t.Answered = at.Answered
				if len(at.ToolArgs) > 0 {
					t.ToolArgs = at.ToolArgs
				}
			}
			if at.Result != "" {
				t.Result = at.Result
			}
			q.ToolExecution = &t
			if !q.Resolved() {
				return req, bad("executor requirement %s is not resolved: confirm it, answer it or give its external result", q.ID)
			}
		}
	case req.RequiresRouteSelection:
		if rejected {
			break
		}
		if len(a.SelectedChoices) == 0 {
			return req, bad("select one of %v", req.AvailableChoices)
		}
		if len(a.SelectedChoices) > 1 && !req.AllowMultipleSelections {
			return req, bad("select one route, not %d", len(a.SelectedChoices))
		}
		for i, c := range a.SelectedChoices {
			if !slices.Contains(req.AvailableChoices, c) {
				return req, bad("%q is not one of %v", c, req.AvailableChoices)
			}
			if slices.Contains(a.SelectedChoices[:i], c) {
				return req, bad("%q is selected twice; select each route once", c)
			}
		}
		t := true
		req.SelectedChoices, req.Confirmed = a.SelectedChoices, &t
	case req.RequiresUserInput:
		if rejected {
			break
		}
		if req.RequiresConfirmation && a.Confirmed == nil {
			return req, bad("confirm or reject it")
		}
		in, err := checkUserInput(req.UserInputSchema, a.UserInput)
		if err != nil {
			return req, fmt.Errorf("step %s: %w", req.StepName, err)
		}
		t := true
		req.UserInput, req.Confirmed = in, &t
		for i := range req.UserInputSchema {
			req.UserInputSchema[i].Value = in[req.UserInputSchema[i].Name]
		}
	default:
		if a.Confirmed == nil {
			return req, bad("confirm or reject it (confirmed true or false)")
		}
		if req.RequiresOutputReview && *a.Confirmed && a.EditedOutput != nil {
			req.EditedOutput = a.EditedOutput
		}
	}
	return req, nil
}

// timers holds the in-process timeouts of paused runs.
type timers struct {
	mu      sync.Mutex
	m       map[string]*time.Timer
	closed  bool
	running sync.WaitGroup // timeouts being applied
	ctx     context.Context
	cancel  context.CancelCauseFunc
}

// errClosed cancels the timeouts being applied when the workflow closes.
var errClosed = errors.New("workflow: closed")

// scheduleTimeouts arms a timer for the earliest timeout of a paused run,
// which applies OnTimeout if nobody continued it by then.
func (w *Workflow) scheduleTimeouts(out *run.Output) {
	at, ok := earliestTimeout(out.StepRequirements)
	if !ok || w.cfg.DB == nil {
		return
	}
	runID, user := out.RunID, out.UserID
	ts := &w.timers
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.closed {
		return // ResumeExpired in the next process applies it
	}
	if ts.m == nil {
		ts.m = map[string]*time.Timer{}
		ts.ctx, ts.cancel = context.WithCancelCause(context.Background())
	}
	if t := ts.m[runID]; t != nil {
		t.Stop()
	}
	var t *time.Timer
	t = time.AfterFunc(max(time.Until(at), 0), func() {
		ts.mu.Lock()
		if ts.closed || ts.m[runID] != t {
			ts.mu.Unlock() // closed, or re-armed since
			return
		}
		delete(ts.m, runID)
		ts.running.Add(1)
		ctx := runScope(ts.ctx, user)
		ts.mu.Unlock()
		defer ts.running.Done()
		if _, err := w.expire(ctx, runID, time.Now()); err != nil && !errors.Is(err, ErrNotPaused) && !errors.Is(err, run.ErrAlreadyRunning) && !errors.Is(err, ErrStepsChanged) && !errors.Is(context.Cause(ctx), errClosed) {
			slog.Warn("workflow: applying on_timeout failed", "workflow_id", w.cfg.ID, "run_id", runID, "error", err)
		}
	})
	ts.m[runID] = t
}

// stopTimeout stops the timer of a paused run being continued.
func (w *Workflow) stopTimeout(runID string) {
	ts := &w.timers
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if t := ts.m[runID]; t != nil {
		t.Stop()
		delete(ts.m, runID)
	}
}

// Close stops the timers of paused runs (their timeouts still apply when
// ResumeExpired runs in the next process), cancels the timeouts being
// applied and waits for them, so that nothing uses the workflow's database
// after Close returns.
func (w *Workflow) Close() {
	ts := &w.timers
	ts.mu.Lock()
	ts.closed = true
	for id, t := range ts.m {
		t.Stop()
		delete(ts.m, id)
	}
	if ts.cancel != nil {
		ts.cancel(errClosed)
	}
	ts.mu.Unlock()
	ts.running.Wait()
}

func earliestTimeout(reqs []run.StepRequirement) (time.Time, bool) {
	var at time.Time
	for _, r := range reqs {
		if r.TimeoutAt == "" || r.Resolved() {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, r.TimeoutAt)
		if err != nil {
			// Agno writes datetime.isoformat(), without a zone for naive UTC.
			if t, err = time.Parse("2006-01-02T15:04:05.999999", r.TimeoutAt); err != nil {
				continue
			}
		}
		if at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at, !at.IsZero()
}

// ResumeExpired finds this workflow's PAUSED runs (of every user: call it
// with a context without a user scope, as a server does at start), applies
// OnTimeout to those whose timeout passed, and arms timers for the others.
// It returns how many runs it ended or continued.
func (w *Workflow) ResumeExpired(ctx context.Context) (int, error) {
	if w.cfg.DB == nil {
		return 0, nil
	}
	// Every page is read before a timeout is applied: a run it ends leaves
	// the PAUSED runs, and the next page would skip as many others.
	var due []*run.Output
	for page := 1; ; page++ {
		rows, _, err := w.cfg.DB.GetRuns(ctx, db.RunFilter{WorkflowID: w.cfg.ID, RunType: run.TypeWorkflow,
			Statuses: []run.Status{run.StatusPaused}, Limit: 100, Page: page})
		if err != nil {
			return 0, err
		}
		for _, row := range rows {
			out, err := row.Output()
			if err != nil {
				continue
			}
			at, ok := earliestTimeout(out.StepRequirements)
			if !ok {
				continue
			}
			if time.Now().Before(at) {
				w.scheduleTimeouts(out)
				continue
			}
			due = append(due, out)
		}
		if len(rows) < 100 {
			break
		}
	}
	n := 0
	for _, out := range due {
		if _, err := w.expire(runScope(ctx, out.UserID), out.RunID, time.Now()); err == nil {
			n++
		} else if !errors.Is(err, ErrNotPaused) && !errors.Is(err, run.ErrAlreadyRunning) && !errors.Is(err, errClaimed) && !errors.Is(err, ErrStepsChanged) {
			return n, err
		}
	}
	return n, nil
}

// SweepTimeouts applies OnTimeout to this workflow's PAUSED runs (of every
// user: call it with a context without a user scope) whose timeout passed
// at now. A server calls it periodically, so timeouts apply while it runs
// whatever the in-process timers do; several replicas may sweep at once:
// each expired requirement is claimed in the database first (its approval
// moves from pending to expired in one conditional update), and only the
// sweeper whose claim succeeded applies it. It returns how many runs it
// ended or continued.
func (w *Workflow) SweepTimeouts(ctx context.Context, now time.Time) (int, error) {
	if w.cfg.DB == nil {
		return 0, nil
	}
	var due []*run.Output
	for page := 1; ; page++ {
		rows, _, err := w.cfg.DB.GetRuns(ctx, db.RunFilter{WorkflowID: w.cfg.ID, RunType: run.TypeWorkflow,
			Statuses: []run.Status{run.StatusPaused}, Limit: 100, Page: page})
		if err != nil {
			return 0, err
		}
		for _, row := range rows {
			out, err := row.Output()
			if err != nil {
				continue
			}
			if at, ok := earliestTimeout(out.StepRequirements); ok && !now.Before(at) {
				due = append(due, out)
			}
		}
		if len(rows) < 100 {
			break
		}
	}
	n := 0
	var errs []error
	for _, out := range due {
		_, err := w.expire(runScope(ctx, out.UserID), out.RunID, now)
		switch {
		case err == nil:
			n++
		case errors.Is(err, ErrNotPaused), errors.Is(err, run.ErrAlreadyRunning), errors.Is(err, errClaimed):
		case errors.Is(err, ErrStepsChanged):
			// A replica still running the steps it paused in applies it.
		default:
			errs = append(errs, fmt.Errorf("run %s: %w", out.RunID, err))
		}
	}
	return n, errors.Join(errs...)
}

// runScope is the scope a timeout of a run of user is applied in: the
// user's, or none for a run without a user (the scope of user "" finds
// only rows whose user_id is "", not a run stored without one).
func runScope(ctx context.Context, user string) context.Context {
	if user == "" {
		return ctx
	}
	return db.WithUserScope(ctx, user)
}

// errClaimed: another process (a replica's sweep or timer) claimed the
// timeout, or a person resolved its approval first.
var errClaimed = errors.New("workflow: the timeout was claimed elsewhere")

// claimTimeout claims the expired requirement r of run runID: its pending
// approval becomes expired, atomically, so that only one process applies
// its OnTimeout. A requirement without an approval row (a run paused
// before approvals were kept) is claimed by whoever gets there.
func (w *Workflow) claimTimeout(ctx context.Context, runID string, r run.StepRequirement) error {
	err := resolveApproval(context.WithoutCancel(ctx), w.cfg.DB, runID, r, db.ApprovalExpired, "timeout", nil)
	switch {
	case err == nil, errors.Is(err, db.ErrNotFound):
		return nil
	case errors.Is(err, db.ErrApprovalResolved):
		return fmt.Errorf("%w: run %s step %s", errClaimed, runID, r.StepID)
	}
	return err
}

// expire applies OnTimeout to the run's requirements whose timeout passed
// at now, each claimed first (claimTimeout).
func (w *Workflow) expire(ctx context.Context, runID string, now time.Time) (*run.Output, error) {
	out, j, err := w.loadPaused(ctx, runID)
	if err != nil {
		return nil, err
	}
	// A requirement whose timeout an earlier expire applied is resolved in
	// the stored run (earliestTimeout leaves it out): it is not claimed or
	// applied again.
	for _, r := range out.StepRequirements {
		if at, ok := earliestTimeout([]run.StepRequirement{r}); ok && !now.Before(at) {
			if err := w.claimTimeout(ctx, runID, r); err != nil {
				return nil, err
			}
		}
	}
	cancelled := false
	for i, r := range out.StepRequirements {
		at, ok := earliestTimeout([]run.StepRequirement{r})
		if !ok || now.Before(at) {
			continue
		}
		switch r.OnTimeout {
		case OnTimeoutApprove:
			if r.RequiresRouteSelection || r.RequiresUserInput {
				// Nothing to approve without a person's choice: skip it.
				j.markSkip(r.StepID)
				f := false
				r.Confirmed = &f
			} else {
				t := true
				r.Confirmed = &t
			}
		case OnTimeoutSkip:
			j.markSkip(r.StepID)
			f := false
			r.Confirmed = &f
		default:
			cancelled = true
		}
		j.setAnswer(r)
		out.StepRequirements[i].Confirmed = r.Confirmed
	}
	if cancelled {
		const why = "a human review timed out (on_timeout cancel)"
		cancelledOut, err := w.cancelPaused(ctx, out, why)
		if err == nil {
			w.endExecutors(ctx, j, why)
		}
		return cancelledOut, err
	}
	for _, r := range out.StepRequirements {
		if _, ok := j.answer(r.StepID, r.IsPostExecution); !ok {
			// Another requirement still waits: store the answers given so
			// far, with the requirements they resolved, and wait for the
			// next timeout.
			if err := w.storeJournal(ctx, out, j); err != nil {
				return out, err
			}
			w.scheduleTimeouts(out)
			return out, nil
		}
	}
	w.prepareResume(out)
	return w.execute(ctx, out, j, agent.CallOptions{SessionID: out.SessionID, UserID: out.UserID, RunID: out.RunID}, nil)
}

func (w *Workflow) storeJournal(ctx context.Context, out *run.Output, j *journal) error {
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	if out.Extra == nil {
		out.Extra = map[string]json.RawMessage{}
	}
	out.Extra[journalKey] = b
	row, err := db.RunFromOutput(out)
	if err == nil {
		_, err = w.cfg.DB.UpsertRun(context.WithoutCancel(ctx), row)
	}
	return err
}

// abandonPaused ends CANCELLED the paused run runID, which nobody will
// continue (a nested workflow's run, paused as its parent's step), with its
// timer and approvals.
func (w *Workflow) abandonPaused(ctx context.Context, runID, reason string) {
	w.stopTimeout(runID)
	if w.cfg.DB == nil {
		return
	}
	out, j, err := w.loadPaused(ctx, runID)
	if err == nil {
		_, err = w.cancelPaused(ctx, out, reason)
	}
	if err == nil {
		w.endExecutors(ctx, j, reason)
	}
	if err != nil {
		slog.Warn("workflow: ending a paused run nobody can continue failed", "workflow_id", w.cfg.ID, "run_id", runID, "error", err)
	}
}

// pausedEnder is a runner (a team) that ends one of its paused runs
// itself, with the runs it waits on.
type pausedEnder interface {
	EndPaused(ctx context.Context, o *run.Output, why string) *run.Output
}

// endExecutors ends CANCELLED the agent and team runs that the paused run
// of journal j waits on (its steps paused for their tools), as the run that
// would continue them ended: left PAUSED, they could still be continued,
// their tools run, afterwards. Each is stored in its runner's database (the
// workflow's when the runner is not found), with its approvals.
func (w *Workflow) endExecutors(ctx context.Context, j *journal, why string) {
	if j == nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	j.mu.Lock()
	paths := slices.Sorted(maps.Keys(j.Executors))
	runs := make([]*run.Output, 0, len(paths))
	for _, p := range paths {
		if o := j.Executors[p]; o != nil {
			runs = append(runs, o)
		}
	}
	j.mu.Unlock()
	why = "the workflow run it paused a step of was cancelled: " + why
	for _, o := range runs {
		r := w.executorRunner(o)
		if e, ok := r.(pausedEnder); ok {
			e.EndPaused(ctx, o, why)
			continue
		}
		d := w.cfg.DB
		if r != nil && r.DB() != nil {
			d = r.DB()
		}
		if d == nil {
			continue
		}
		// Only a stored run is ended: a runner without a database keeps
		// its paused run in the journal alone, which ended with the run.
		row, err := d.GetRun(ctx, o.RunID)
		var stored *run.Output
		if err == nil {
			stored, err = row.Output()
		}
		if errors.Is(err, db.ErrNotFound) {
			continue
		}
		if err != nil {
			slog.Warn("workflow: ending the paused run of a step failed", "workflow_id", w.cfg.ID, "run_id", o.RunID, "error", err)
			continue
		}
		if stored.Status != run.StatusPaused {
			continue // continued, or ended, meanwhile
		}
		ended := *stored // as stored: offloaded, media referenced
		ended.Status, ended.ContentType, ended.UpdatedAt = run.StatusCancelled, "str", time.Now().Unix()
		ended.Content = fmt.Sprintf("run %s was cancelled: %s", o.RunID, why)
		ended.ClearPause()
		row, err = db.RunFromOutput(&ended)
		if err == nil {
			_, err = d.UpsertRun(ctx, row)
		}
		if err == nil {
			err = d.SetApprovalsRunStatus(ctx, o.RunID, string(run.StatusCancelled))
		}
		if err != nil {
			slog.Warn("workflow: ending the paused run of a step failed", "workflow_id", w.cfg.ID, "run_id", o.RunID, "error", err)
		}
	}
}

// executorRunner is the runner of the workflow's steps whose run o is (nil
// when none is).
func (w *Workflow) executorRunner(o *run.Output) agent.Runner {
	want := run.Component{Type: run.TypeAgent, ID: o.AgentID}
	if o.AgentID == "" {
		want = run.Component{Type: run.TypeTeam, ID: o.TeamID}
	}
	var found agent.Runner
	var walk func([]Step)
	walk = func(steps []Step) {
		for i := range steps {
			s := &steps[i]
			if found != nil {
				return
			}
			if s.Runner != nil {
				if c := s.Runner.Component(); c.Type == want.Type && c.ID == want.ID {
					found = s.Runner
					return
				}
			}
			if s.Steps != nil {
				walk(s.Steps.Steps)
			}
			if s.Loop != nil {
				walk(s.Loop.Steps)
			}
			if s.Parallel != nil {
				walk(s.Parallel.Steps)
			}
			if s.Condition != nil {
				walk(s.Condition.Steps)
				walk(s.Condition.Else)
			}
			if s.Router != nil {
				walk(s.Router.Choices)
			}
		}
	}
	walk(w.cfg.Steps)
	return found
}

// cancelPaused ends a paused run CANCELLED without running anything.
func (w *Workflow) cancelPaused(ctx context.Context, out *run.Output, reason string) (*run.Output, error) {
	// Registered like a run, so a continue of the same run cannot go on
	// meanwhile; then the run must still be PAUSED.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(context.Canceled)
	ctx, unregister, err := run.DefaultRegistry().Begin(ctx, run.Registration{RunID: out.RunID, Component: w.Component(), UserID: out.UserID}, cancel)
	if err != nil {
		return nil, err
	}
	defer unregister()
	if row, err := w.cfg.DB.GetRun(ctx, out.RunID); err != nil {
		return nil, err
	} else if row.Status != run.StatusPaused {
		return nil, fmt.Errorf("%w: run %s is %s", ErrNotPaused, out.RunID, row.Status)
	}
	out.Status, out.StepRequirements, out.PausedStepIndex, out.PausedStepName, out.PauseKind = run.StatusCancelled, nil, nil, "", ""
	out.Content, out.ContentType, out.UpdatedAt = fmt.Sprintf("run %s was cancelled: %s", out.RunID, reason), "str", time.Now().Unix()
	delete(out.Extra, journalKey)
	row, err := db.RunFromOutput(out)
	if err == nil {
		_, err = w.cfg.DB.UpsertRun(context.WithoutCancel(ctx), row)
	}
	if err == nil {
		w.approvalsFollow(ctx, out.RunID, out.Status)
	}
	return out, err
}
