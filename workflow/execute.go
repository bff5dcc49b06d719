package workflow

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sessionline"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
)

// errPaused unwinds the step tree when a step waits for a person; the run
// is then stored PAUSED with x.pending.
var errPaused = errors.New("workflow: paused for human review")

// errRejected cancels a run whose step was rejected with OnReject cancel.
var errRejected = errors.New("rejected by a reviewer (on_reject cancel)")

// exec is one workflow run in progress (a new run, or a paused one
// continued: then the journal replays what already happened).
type exec struct {
	w    *Workflow
	ctx  context.Context
	out  *run.Output
	emit func(run.Event) bool // nil for Run
	// branchEvents, while the outermost Parallel's branches run, carries
	// their events (nested Parallels' too) to the goroutine running that
	// Parallel, which delivers them (branchEvents); nil otherwise.
	branchEvents chan run.Event
	deps         map[string]any
	state        *State
	input        string
	// cancel ends the run, e.g. when a stream consumer stops reading.
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	outputs map[string]run.StepOutput // every output so far, by step name
	metrics map[string]run.StepMetrics
	pending []run.StepRequirement
	errs    []run.ErrorRequirement // failed steps waiting for a decision (on_error pause)
	j       *journal
	// jr and attempt are WithJournal's: each leaf step's output is a step
	// of jr, and each agent or team step's run is journaled with it.
	jr       run.Journal
	attempt  int
	stepRuns []string // the step runs journaled with jr
	failText string
	// fails are the failure texts by the path of the step that failed,
	// each with its order (failSeq): a Parallel whose branches failed says
	// its first failed branch's, whichever failed last.
	fails   map[string]failNote
	failSeq int
	// off and media are the run's offloader and media storage (storage.go).
	off   *offload.Offloader
	media media.Storage
	// counted is what the session's metrics already hold of this run (a
	// continued run's earlier legs, then each save's); nil: nothing.
	counted *run.SessionMetrics
	// readState is the session state the run read at its start (before
	// the call's state, over): a save writes the run's changes to it over
	// the state stored then (sessionline.MergeState).
	readState, over map[string]any
}

func (w *Workflow) newOutput(input run.Input, o agent.CallOptions) *run.Output {
	in := input
	out := &run.Output{RunID: o.RunID, WorkflowID: w.cfg.ID, WorkflowName: w.cfg.Name, SessionID: o.SessionID,
		ParentRunID: o.ParentRunID, WorkflowStepID: o.WorkflowStepID, UserID: o.UserID, Input: &in, Status: run.StatusRunning, CreatedAt: time.Now().Unix(),
		// As an agent's and a team's: the workflow's own metadata over
		// the call's (docs/adr/run-metadata-precedence.md).
		Metadata: run.MergeMetadata(o.Metadata, w.cfg.Metadata)}
	return out
}

// execute runs out (a new run, or a paused one with its journal j) to its
// end or its next pause.
func (w *Workflow) execute(ctx context.Context, out *run.Output, j *journal, o agent.CallOptions, emit func(run.Event) bool) (*run.Output, error) {
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
	continued := j != nil
	if continued && w.cfg.DB != nil {
		// Two continues (or a continue and a timeout) that both read the
		// run PAUSED: only the first to register runs it.
		row, err := w.cfg.DB.GetRun(context.WithoutCancel(ctx), out.RunID)
		if err != nil {
			return nil, err
		}
		if row.Status != run.StatusPaused {
			return nil, fmt.Errorf("%w: run %s is %s", ErrNotPaused, out.RunID, row.Status)
		}
		// PAUSED again, by another continue (or a timeout) that ran it
		// since this one read it: going on would run its steps again.
		stored, err := row.Output()
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(stored.Extra[journalKey], j.loaded) {
			return nil, fmt.Errorf("%w: run %s was continued since it was read; read it again and answer what it waits for now", ErrNotPaused, out.RunID)
		}
	}
	if continued {
		// Only the continue that holds the run records its answers on the
		// run's approvals: a losing one must not resolve them with answers
		// the run never used.
		w.settleApprovals(ctx, out.RunID, out.UserID, j.answered)
		// Its pause's timer has nothing left to do (a new pause arms its
		// own): kept, it held the run until its timeout, days maybe.
		w.stopTimeout(out.RunID)
	}
	if j == nil {
		j = &journal{}
	}
	if fn := o.EventFunc; fn != nil {
		// WithEventFunc: the run's events go to fn, and on to the stream's
		// consumer when there is one.
		next := emit
		emit = func(e run.Event) bool {
			fn(e)
			return next == nil || next(e)
		}
	}
	x := &exec{w: w, ctx: ctx, out: out, emit: emit, deps: o.Dependencies, cancel: cancel, j: j,
		outputs: map[string]run.StepOutput{}, metrics: map[string]run.StepMetrics{}, jr: o.Journal, attempt: max(o.Attempt, 1)}
	if continued {
		// The session's metrics counted the paused run's steps when it was
		// stored; this leg adds what it adds over them.
		c := run.RunShare(out.Metrics, nil)
		x.counted = &c
	}
	if err := x.fence(); err != nil {
		return nil, err
	}
	if out.Input != nil {
		x.input = out.Input.Text()
	}
	x.storage(o)
	if err := x.start(o.SessionState); err != nil {
		return nil, err
	}
	x.send(x.ev(run.EventWorkflowStarted))
	start := time.Now()
	results, content, failure := x.sequence(ctx, w.cfg.Steps, scope{}, x.input)
	if failure != nil && errors.Is(failure, errPaused) && ctx.Err() == nil {
		return x.pause(results, start)
	}
	x.finishMetrics(results, start)
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
		final.Content, final.ErrorType, final.Error = out.Content, "StepError", x.failText
	default:
		out.Status = run.StatusCompleted
		out.Content, out.ContentType = content, "str"
		if _, ok := content.(string); !ok && content != nil {
			out.ContentType = "dict"
		}
		final = x.ev(run.EventWorkflowCompleted)
		final.Content, final.ContentType, final.Metrics = out.Content, out.ContentType, out.Metrics
		// Agno's WorkflowCompletedEvent carries the step results too.
		final.StepResults = out.StepResults
	}
	out.StepRequirements, out.PausedStepIndex, out.PausedStepName, out.PauseKind = nil, nil, "", ""
	out.ErrorRequirements = nil
	if err := x.fence(); err != nil {
		// A newer attempt of this run holds it: save nothing over it.
		return out, err
	}
	persistErr := x.save(nil)
	if persistErr == nil {
		x.clearStepJournals()
	}
	if persistErr == nil {
		x.w.approvalsFollow(x.ctx, out.RunID, out.Status)
	}
	if persistErr != nil {
		// Never say the run completed (or failed, or was cancelled) when it
		// was not stored.
		final = x.ev(run.EventWorkflowError)
		final.Content, final.ErrorType = "storage error: the workflow run could not be saved", "StorageError"
		final.Error = final.Content.(string)
	}
	x.send(final)
	return out, errors.Join(runErr, persistErr)
}

// pause stores the run PAUSED with what its steps wait for.
func (x *exec) pause(results []run.StepOutput, start time.Time) (*run.Output, error) {
	x.finishMetrics(results, start)
	out := x.out
	reqs := slices.Clone(x.pending)
	slices.SortFunc(reqs, func(a, b run.StepRequirement) int { return comparePaths(a.StepID, b.StepID) })
	errs := slices.Clone(x.errs)
	slices.SortFunc(errs, func(a, b run.ErrorRequirement) int { return comparePaths(a.StepID, b.StepID) })
	out.Status, out.StepRequirements, out.ErrorRequirements, out.PauseKind = run.StatusPaused, reqs, errs, "step"
	if slices.ContainsFunc(reqs, func(r run.StepRequirement) bool { return r.RequiresExecutorInput }) {
		out.PauseKind = "executor"
	}
	out.Content, out.ContentType = nil, ""
	x.j.Shape = x.w.shape
	first := ""
	if len(reqs) > 0 {
		first = reqs[0].StepID
	}
	if len(errs) > 0 && (first == "" || comparePaths(errs[0].StepID, first) < 0) {
		first = errs[0].StepID
	}
	top := strings.SplitN(first, ".", 2)[0]
	for i, s := range x.w.cfg.Steps {
		if fmt.Sprint(i) == top {
			out.PausedStepIndex, out.PausedStepName = &i, s.Name
		}
	}
	err := x.save(x.j)
	if err == nil {
		x.w.approvalsFollow(x.ctx, out.RunID, run.StatusPaused)
		if qerr := x.w.queueApprovals(context.WithoutCancel(x.ctx), out); qerr != nil {
			err = fmt.Errorf("workflow: %w: queue approvals of run %s: %w", agent.ErrStorage, out.RunID, qerr)
		}
	}
	e := x.ev(run.EventWorkflowPaused)
	e.StepRequirements, e.ErrorRequirements, e.PausedStepIndex, e.PausedStepName = reqs, errs, out.PausedStepIndex, out.PausedStepName
	// Agno's WorkflowPausedEvent has status "PAUSED"; the event's one
	// "status" member is the embedded TaskEvent's.
	e.TaskEvent = &run.TaskEvent{Status: string(run.StatusPaused)}
	if err != nil {
		e = x.ev(run.EventWorkflowError)
		e.Content, e.ErrorType = "storage error: the workflow run could not be saved", "StorageError"
		e.Error = e.Content.(string)
	}
	x.send(e)
	if err == nil {
		x.w.scheduleTimeouts(out)
	}
	return out, err
}

func (x *exec) finishMetrics(results []run.StepOutput, start time.Time) {
	// Agno's WorkflowMetrics: the duration and each step's metrics by name
	// (Agno requires the steps key, even when empty).
	x.out.Metrics = &run.Metrics{Duration: time.Since(start).Seconds(), Steps: x.metrics}
	x.out.StepResults = results
}

func (x *exec) ev(t run.EventType) run.Event {
	return run.Event{Event: t, CreatedAt: time.Now().Unix(), WorkflowID: x.out.WorkflowID, WorkflowName: x.out.WorkflowName,
		RunID: x.out.RunID, SessionID: x.out.SessionID}
}

// stepEv is an event about the step at sc.
func (x *exec) stepEv(t run.EventType, s *Step, sc scope) run.Event {
	e := x.ev(t)
	i := sc.index
	e.StepName, e.StepIndex, e.StepID, e.ParentStepID, e.NestedDepth = s.Name, &i, sc.path, sc.parent, sc.depth
	return e
}

// send delivers e to a stream consumer; one that stops reading cancels the
// run. A Parallel's branches send concurrently, through branchEvents: the
// consumer's loop body runs on the goroutine that ranges over the stream
// (where its panic, t.Fatal or goroutine-bound state belong), never on a
// branch's.
func (x *exec) send(e run.Event) {
	if x.emit == nil {
		return
	}
	if ch := x.branchEvents; ch != nil {
		ch <- e // received until every branch has returned
		return
	}
	x.deliver(e)
}

// deliver gives e to the consumer, on the stream's goroutine.
func (x *exec) deliver(e run.Event) {
	if !x.emit(e) {
		x.cancel(errStreamStopped)
	}
}

// branches runs each of n branches on a goroutine of its own and returns
// when all have returned. With a stream consumer, the outermost Parallel's
// goroutine delivers the branches' events meanwhile (send); when the
// consumer's loop body panics, the run is cancelled, the branches' events
// are dropped until they return, and the panic goes on to the consumer.
func (x *exec) branches(n int, branch func(i int)) {
	var wg sync.WaitGroup
	outer := x.emit != nil && x.branchEvents == nil
	if outer {
		x.branchEvents = make(chan run.Event)
	}
	for i := range n {
		wg.Go(func() { branch(i) })
	}
	if !outer {
		wg.Wait()
		return
	}
	ch, done := x.branchEvents, make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	delivered := false
	defer func() {
		if delivered {
			return
		}
		// The consumer's loop body panicked: nothing is delivered any
		// more, and no branch is left blocked in send.
		x.cancel(errStreamStopped)
		go func() {
			for {
				select {
				case <-ch:
				case <-done:
					return
				}
			}
		}()
	}()
	for {
		select {
		case e := <-ch:
			x.deliver(e)
		case <-done:
			x.branchEvents, delivered = nil, true
			return
		}
	}
}

// scope is where a step sits: its id path, its parent's, its index among
// its siblings and its depth. owner, set on a scope that is not a step's
// (a loop iteration, a condition's else branch), is the step id of the
// primitive it belongs to: the parent_step_id of the steps in it.
type scope struct {
	path, parent, owner string
	index, depth        int
}

func (sc scope) child(i int, seg string) scope {
	p := fmt.Sprint(i)
	if seg != "" {
		p = seg + "." + p
	}
	if sc.path != "" {
		p = sc.path + "." + p
	}
	return scope{path: p, parent: cmp.Or(sc.owner, sc.path), index: i, depth: sc.depth + 1}
}

func (sc scope) top(i int) scope { return scope{path: fmt.Sprint(i), index: i} }

// sequence runs steps in order from content, returning their outputs and
// the content the last one left. It stops at the first error (errPaused
// included) and after a step that stopped the run (whose output says Stop,
// a primitive's when a step in it stopped: a stop is passed up through the
// outputs, so a Parallel's other branches run to their end, as in Agno).
func (x *exec) sequence(ctx context.Context, steps []Step, parent scope, content any) ([]run.StepOutput, any, error) {
	var results []run.StepOutput
	for i := range steps {
		if ctx.Err() != nil {
			return results, content, context.Cause(ctx)
		}
		sc := parent.top(i)
		if parent.path != "" || parent.depth > 0 {
			sc = parent.child(i, "")
		}
		res, skipped, err := x.node(ctx, &steps[i], sc, content)
		if !skipped && (err == nil || res.StepName != "") {
			results = append(results, res)
		}
		if err != nil {
			return results, content, err
		}
		if passesOn(res, skipped) {
			content = res.Content
		}
		if !skipped && res.Stop {
			break
		}
	}
	return results, content, nil
}

// passesOn reports whether a step's content is the next step's input: not
// when the step was left out, nor when it is a Step that failed and was
// skipped (OnError skip); a composite one of whose steps failed so passes
// on what the others left (a Parallel, their results).
func passesOn(res run.StepOutput, skipped bool) bool {
	if res.StepType == typeCondition && len(res.Steps) == 0 {
		// Nothing ran (its content says it was not met): the next step
		// gets what the Condition got.
		return false
	}
	return !skipped && (res.StepType != typeStep || res.Success == nil || *res.Success)
}

// node runs one step of any kind. skipped reports a step left out (rejected
// with skip, or a failure with OnError skip), whose content does not pass on.
func (x *exec) node(ctx context.Context, s *Step, sc scope, content any) (run.StepOutput, bool, error) {
	switch {
	case s.Runner != nil || s.Func != nil:
		return x.leaf(ctx, s, sc, content)
	}
	kind, _ := s.kind()
	if h := s.HumanReview; h != nil && h.RequiresConfirmation {
		a, ok := x.j.answer(sc.path, false)
		if !ok {
			r := h.requirement(s, kind, sc.path, sc.index)
			r.RequiresConfirmation, r.ConfirmationMessage = true, h.ConfirmationMessage
			return run.StepOutput{}, false, x.ask(s, sc, r, pausedEventOf(kind))
		}
		if !*a.Confirmed {
			if kind == typeCondition && x.onReject(h, sc) == OnRejectElse {
				return x.condition(ctx, s, sc, content, false, true)
			}
			return x.rejected(s, sc, h)
		}
	}
	switch kind {
	case typeSteps:
		return x.group(ctx, s, sc, content)
	case typeLoop:
		return x.loop(ctx, s, sc, content)
	case typeParallel:
		return x.parallel(ctx, s, sc, content)
	case typeCondition:
		return x.condition(ctx, s, sc, content, false, false)
	default:
		return x.router(ctx, s, sc, content)
	}
}

// onReject is the step's OnReject, or skip for a pause that timed out with
// on_timeout skip.
func (x *exec) onReject(h *HumanReview, sc scope) string {
	if x.j.skipped(sc.path) {
		return OnRejectSkip
	}
	return h.onReject()
}

func pausedEventOf(kind string) run.EventType {
	switch kind {
	case typeCondition:
		return run.EventConditionPaused
	case typeRouter:
		return run.EventRouterPaused
	}
	return run.EventStepPaused
}

// ask records a pause and tells the stream.
func (x *exec) ask(s *Step, sc scope, r run.StepRequirement, evType run.EventType) error {
	x.mu.Lock()
	x.pending = append(x.pending, r)
	x.j.forget(r)
	x.mu.Unlock()
	e := x.stepEv(evType, s, sc)
	e.RequiresConfirmation, e.ConfirmationMessage = r.RequiresConfirmation, r.ConfirmationMessage
	e.RequiresUserInput, e.UserInputMessage = r.RequiresUserInput, r.UserInputMessage
	e.AvailableChoices, e.OutputReviewMessage = r.AvailableChoices, r.OutputReviewMessage
	e.AllowMultipleSelections = r.AllowMultipleSelections
	e.StepRequirements = []run.StepRequirement{r}
	if r.IsPostExecution {
		e.Event = run.EventStepOutputReview
	}
	x.send(e)
	return errPaused
}

// rejected applies OnReject to a step a person rejected.
func (x *exec) rejected(s *Step, sc scope, h *HumanReview) (run.StepOutput, bool, error) {
	if x.onReject(h, sc) == OnRejectCancel {
		x.cancel(fmt.Errorf("step %s %w", s.Name, errRejected))
		return run.StepOutput{}, true, context.Cause(x.ctx)
	}
	return run.StepOutput{}, true, nil
}

// record keeps out as the latest output of its name (StepInput's
// PreviousStepOutputs) and its metrics.
func (x *exec) record(out run.StepOutput) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.outputs[out.StepName] = out
}

// recordMetrics keeps a leaf step's metrics for the run's metrics.steps:
// those of a step whose executor has metrics (an agent, a team, a nested
// workflow), as Agno lists only its agent and team steps there; a function
// step, with none, is not listed.
func (x *exec) recordMetrics(out run.StepOutput) {
	if out.Metrics == nil || out.ExecutorType == "function" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.metrics[out.StepName] = run.StepMetrics{StepName: out.StepName, ExecutorType: out.ExecutorType, ExecutorName: out.ExecutorName, Metrics: out.Metrics}
}

func (x *exec) stepInput(content any) *StepInput {
	x.mu.Lock()
	prev := maps.Clone(x.outputs)
	x.mu.Unlock()
	return &StepInput{Input: x.input, PreviousStepContent: content, PreviousStepOutputs: prev, AdditionalData: x.deps, State: x.state}
}

func okOutput(s *Step, kind string, sc scope, content any, children []run.StepOutput) run.StepOutput {
	ok := true
	stop := false
	for _, c := range children {
		if c.Success != nil && !*c.Success {
			ok = false
		}
		stop = stop || c.Stop
	}
	return run.StepOutput{StepName: s.Name, StepID: sc.path, StepType: kind, ExecutorType: strings.ToLower(kind), ExecutorName: s.Name,
		Content: content, Success: &ok, Stop: stop, Steps: children}
}

func (x *exec) group(ctx context.Context, s *Step, sc scope, content any) (run.StepOutput, bool, error) {
	e := x.stepEv(run.EventStepsExecutionStarted, s, sc)
	n := len(s.Steps.Steps)
	e.StepsCount = &n
	x.send(e)
	results, last, err := x.sequence(ctx, s.Steps.Steps, sc, content)
	out := okOutput(s, typeSteps, sc, last, results)
	if err != nil {
		return out, false, err
	}
	x.record(out)
	e = x.stepEv(run.EventStepsExecutionCompleted, s, sc)
	executed := len(results)
	e.StepsCount, e.ExecutedSteps, e.StepResults = &n, &executed, results
	x.send(e)
	return out, false, nil
}

func (x *exec) loop(ctx context.Context, s *Step, sc scope, content any) (run.StepOutput, bool, error) {
	l := s.Loop
	maxIt := l.MaxIterations
	e := x.stepEv(run.EventLoopExecutionStarted, s, sc)
	e.TaskEvent = &run.TaskEvent{MaxIterations: maxIt}
	x.send(e)
	var all []run.StepOutput
	last := content
	it := 0
	var iterations [][]run.StepOutput // each iteration's outputs, for LoopExecutionCompleted
	for it < maxIt {
		if ctx.Err() != nil {
			return okOutput(s, typeLoop, sc, last, all), false, context.Cause(ctx)
		}
		it++
		e := x.stepEv(run.EventLoopIterationStarted, s, sc)
		e.TaskEvent = &run.TaskEvent{Iteration: it, MaxIterations: maxIt}
		x.send(e)
		isc := scope{path: sc.path + ".i" + fmt.Sprint(it-1), parent: sc.path, owner: sc.path, index: sc.index, depth: sc.depth}
		results, c, err := x.sequence(ctx, l.Steps, isc, last)
		all = append(all, results...)
		if err != nil {
			return okOutput(s, typeLoop, sc, last, all), false, err
		}
		last = c
		end := slices.ContainsFunc(results, func(o run.StepOutput) bool { return o.Stop })
		if !end && l.EndCondition != nil {
			key := isc.path + ".end"
			if d, ok := x.j.decision(key); ok {
				end = d == "true"
			} else {
				var err error
				if end, err = guard("the loop's end condition", func() (bool, error) {
					return l.EndCondition(LoopIteration{Iteration: it, MaxIterations: maxIt, Outputs: results, State: x.state})
				}); err != nil {
					ferr := x.fail(sc, fmt.Sprintf("step %s: %v", s.Name, err))
					x.sendStepError(s, sc, ferr)
					return okOutput(s, typeLoop, sc, last, all), false, ferr
				}
				x.j.decide(key, fmt.Sprint(end))
			}
		}
		cont := !end && it < maxIt
		e = x.stepEv(run.EventLoopIterationCompleted, s, sc)
		e.TaskEvent = &run.TaskEvent{Iteration: it, MaxIterations: maxIt}
		e.ShouldContinue, e.IterationResults = &cont, results
		iterations = append(iterations, results)
		x.send(e)
		if h := s.HumanReview; h != nil && h.RequiresIterationReview && cont {
			a, ok := x.j.answer(isc.path, true)
			if !ok {
				r := h.requirement(s, typeLoop, isc.path, sc.index)
				r.RequiresConfirmation, r.ConfirmationMessage = true, cmp.Or(h.IterationReviewMessage, fmt.Sprintf("Iteration %d of %s finished: run another?", it, s.Name))
				r.IsPostExecution = true
				r.Extra = map[string]json.RawMessage{"requires_iteration_review_pause": json.RawMessage("true")}
				return okOutput(s, typeLoop, sc, last, all), false, x.ask(s, sc, r, run.EventStepPaused)
			}
			if !*a.Confirmed {
				if x.onReject(h, isc) == OnRejectCancel {
					x.cancel(fmt.Errorf("loop %s %w", s.Name, errRejected))
					return okOutput(s, typeLoop, sc, last, all), false, context.Cause(ctx)
				}
				cont = false
			}
		}
		if !cont {
			break
		}
	}
	out := okOutput(s, typeLoop, sc, last, all)
	x.record(out)
	e = x.stepEv(run.EventLoopExecutionCompleted, s, sc)
	e.TaskEvent = &run.TaskEvent{MaxIterations: maxIt}
	e.TotalIterations, e.AllResults = &it, iterations
	x.send(e)
	return out, false, nil
}

func (x *exec) parallel(ctx context.Context, s *Step, sc scope, content any) (run.StepOutput, bool, error) {
	steps := s.Parallel.Steps
	n := len(steps)
	e := x.stepEv(run.EventParallelExecutionStarted, s, sc)
	e.ParallelStepCount = &n
	x.send(e)
	type branch struct {
		out     run.StepOutput
		skipped bool
		err     error
	}
	res := make([]branch, n)
	x.branches(n, func(i int) {
		o, sk, err := x.node(ctx, &steps[i], sc.child(i, ""), content)
		res[i] = branch{o, sk, err}
	})
	var outs []run.StepOutput
	var failed, paused error
	failedAt := 0
	for i, b := range res {
		if !b.skipped && b.out.StepName != "" {
			outs = append(outs, b.out)
		}
		switch {
		case b.err == nil:
		case errors.Is(b.err, errPaused):
			paused = b.err
		case failed == nil:
			failed, failedAt = b.err, i
		}
	}
	out := okOutput(s, typeParallel, sc, nil, outs)
	out.Content = aggregate(outs)
	switch {
	case ctx.Err() != nil:
		return out, false, context.Cause(ctx)
	case failed != nil:
		x.failedBranch(sc.child(failedAt, "").path)
		return out, false, failed
	case paused != nil:
		return out, false, paused
	}
	x.record(out)
	e = x.stepEv(run.EventParallelExecutionCompleted, s, sc)
	e.ParallelStepCount, e.StepResults = &n, outs
	x.send(e)
	return out, false, nil
}

// aggregate is a Parallel's content, built as Agno builds it.
func aggregate(outs []run.StepOutput) string {
	var b strings.Builder
	b.WriteString("## Parallel Execution Results\n\n")
	for i, o := range outs {
		icon := "✅ SUCCESS:"
		if o.Success != nil && !*o.Success {
			icon = "❌ FAILURE:"
		}
		fmt.Fprintf(&b, "### %s %s\n", icon, cmp.Or(o.StepName, fmt.Sprintf("Step %d", i+1)))
		if c := run.ContentText(o.Content); o.Content != nil && strings.TrimSpace(c) != "" {
			b.WriteString(c + "\n\n")
		} else {
			b.WriteString("*(No content)*\n\n")
		}
	}
	return strings.TrimSpace(b.String())
}

// condition runs the Condition at s; forced says the branch is already
// chosen (else, after a rejection with OnReject else).
func (x *exec) condition(ctx context.Context, s *Step, sc scope, content any, _ bool, forceElse bool) (run.StepOutput, bool, error) {
	c := s.Condition
	var result bool
	if !forceElse {
		key := sc.path + ".if"
		if d, ok := x.j.decision(key); ok {
			result = d == "true"
		} else {
			var err error
			if result, err = guard("the condition's evaluator", func() (bool, error) { return c.Evaluator(x.stepInput(content)) }); err != nil {
				ferr := x.fail(sc, fmt.Sprintf("step %s: %v", s.Name, err))
				x.sendStepError(s, sc, ferr)
				return run.StepOutput{}, false, ferr
			}
			x.j.decide(key, fmt.Sprint(result))
		}
	}
	e := x.stepEv(run.EventConditionExecutionStarted, s, sc)
	e.ConditionResult = &result
	x.send(e)
	branch, steps, seg := "if", c.Steps, ""
	if !result {
		branch, steps, seg = "else", c.Else, "else"
		if len(steps) == 0 {
			branch = "" // Agno's branch None: false, and no Else
		}
	}
	var results []run.StepOutput
	last := content
	if len(steps) > 0 {
		bsc := sc
		if seg != "" {
			bsc = scope{path: sc.path + "." + seg, parent: sc.path, owner: sc.path, index: sc.index, depth: sc.depth}
		}
		var err error
		results, last, err = x.sequence(ctx, steps, bsc, content)
		if err != nil {
			return okOutput(s, typeCondition, sc, last, results), false, err
		}
	}
	out := okOutput(s, typeCondition, sc, last, results)
	if len(steps) == 0 {
		out.Content = fmt.Sprintf("Condition %s not met - skipped %d steps", s.Name, len(c.Steps))
	}
	x.record(out)
	e = x.stepEv(run.EventConditionExecutionCompleted, s, sc)
	executed := len(results)
	e.ConditionResult, e.ExecutedSteps, e.Branch, e.StepResults = &result, &executed, branch, results
	x.send(e)
	return out, false, nil
}

func (x *exec) router(ctx context.Context, s *Step, sc scope, content any) (run.StepOutput, bool, error) {
	r, h := s.Router, s.HumanReview
	names := stepNames(r.Choices)
	var selected []string
	key := sc.path + ".route"
	if d, ok := x.j.decision(key); ok {
		_ = json.Unmarshal([]byte(d), &selected)
	} else if h != nil && h.RequiresUserInput {
		a, ok := x.j.answer(sc.path, false)
		if !ok || a.Confirmed != nil && *a.Confirmed && len(a.SelectedChoices) == 0 {
			req := h.requirement(s, typeRouter, sc.path, sc.index)
			req.RequiresRouteSelection, req.AvailableChoices, req.AllowMultipleSelections = true, names, h.AllowMultipleSelections
			req.RequiresUserInput, req.UserInputMessage = true, cmp.Or(h.UserInputMessage, "Select the route(s) to run")
			return run.StepOutput{}, false, x.ask(s, sc, req, run.EventRouterPaused)
		}
		if a.Confirmed != nil && !*a.Confirmed {
			return x.rejected(s, sc, h)
		}
		selected = a.SelectedChoices
	} else {
		var err error
		if selected, err = guard("the router's selector", func() ([]string, error) { return r.Selector(x.stepInput(content)) }); err != nil {
			ferr := x.fail(sc, fmt.Sprintf("step %s: %v", s.Name, err))
			x.sendStepError(s, sc, ferr)
			return run.StepOutput{}, false, ferr
		}
		for i, n := range selected {
			msg := ""
			switch {
			case !slices.Contains(names, n):
				msg = fmt.Sprintf("step %s: the selector chose %q, not one of %v", s.Name, n, names)
			case slices.Contains(selected[:i], n):
				// A choice's id is its place among the choices: run twice,
				// its second run would be its first's, replayed.
				msg = fmt.Sprintf("step %s: the selector chose %q twice; a choice runs once", s.Name, n)
			}
			if msg != "" {
				ferr := x.fail(sc, msg)
				x.sendStepError(s, sc, ferr)
				return run.StepOutput{}, false, ferr
			}
		}
	}
	b, _ := json.Marshal(selected)
	x.j.decide(key, string(b))
	e := x.stepEv(run.EventRouterExecutionStarted, s, sc)
	e.SelectedSteps = selected
	x.send(e)
	var results []run.StepOutput
	last := content
	for _, name := range selected {
		i := slices.Index(names, name)
		o, skipped, err := x.node(ctx, &r.Choices[i], sc.child(i, ""), last)
		if !skipped && o.StepName != "" {
			results = append(results, o)
		}
		if err != nil {
			return okOutput(s, typeRouter, sc, last, results), false, err
		}
		if passesOn(o, skipped) {
			last = o.Content
		}
		if !skipped && o.Stop {
			break
		}
	}
	out := okOutput(s, typeRouter, sc, last, results)
	if h != nil && h.RequiresOutputReview {
		return x.review(ctx, s, sc, out, nil)
	}
	x.record(out)
	e = x.stepEv(run.EventRouterExecutionCompleted, s, sc)
	executed := len(results)
	e.SelectedSteps, e.ExecutedSteps, e.StepResults = selected, &executed, results
	x.send(e)
	return out, false, nil
}

// failNote is a failure's text and order.
type failNote struct {
	seq  int
	text string
}

// fail records what events and the stored run say about the failed step at
// sc (parallel branches may fail at once) and returns it as the step's
// error.
func (x *exec) fail(sc scope, text string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.noteFail(sc.path, text)
	return errors.New(text)
}

// noteFail records text as the run's failure text, of the step at path.
// x.mu is held.
func (x *exec) noteFail(path, text string) {
	x.failText = text
	if x.fails == nil {
		x.fails = map[string]failNote{}
	}
	x.failSeq++
	x.fails[path] = failNote{x.failSeq, text}
}

// failedBranch makes the latest failure of the steps under path (a
// Parallel's branch, the first in branch order that failed) the run's
// failure text again: branches fail in any order, and the Parallel's error
// is its first failed branch's.
func (x *exec) failedBranch(path string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	best, found := "", false
	for p, n := range x.fails {
		if (p == path || strings.HasPrefix(p, path+".")) && (!found || n.seq > x.fails[best].seq) {
			best, found = p, true
		}
	}
	if found {
		x.noteFail(best, x.fails[best].text)
	}
}

// sendStepError sends the StepError event of the step at sc, failed with
// ferr (fail's: another branch's text may be the run's by now).
func (x *exec) sendStepError(s *Step, sc scope, ferr error) {
	if x.ctx.Err() == nil {
		e := x.stepEv(run.EventStepError, s, sc)
		e.Content = ferr.Error()
		e.Error = e.Content.(string)
		x.send(e)
	}
}

// leaf runs a Runner or Func step, with its human review.
func (x *exec) leaf(ctx context.Context, s *Step, sc scope, content any) (run.StepOutput, bool, error) {
	if out, ok := x.j.done(sc.path); ok {
		if out.Success == nil || *out.Success {
			x.record(out) // a failure skipped (OnError skip) is not an output the next steps see
		}
		x.recordMetrics(out)
		x.noteStepRun(out.StepRunID)
		return out, false, nil
	}
	h := s.HumanReview
	if d, ok := x.j.decision(errorKey(sc.path)); ok {
		// A person decided what to do about this step's error.
		switch d {
		case DecisionSkip:
			return run.StepOutput{}, true, nil
		case DecisionCancel:
			x.cancel(fmt.Errorf("step %s failed and a reviewer cancelled the run (on_error pause)", s.Name))
			return run.StepOutput{}, true, context.Cause(x.ctx)
		}
		x.j.undecide(errorKey(sc.path))
		x.j.retried(errorKey(sc.path), x.j.retries(errorKey(sc.path))+1)
	}
	var userInput map[string]any
	if h != nil && (h.RequiresConfirmation || h.RequiresUserInput) {
		a, ok := x.j.answer(sc.path, false)
		if !ok {
			r := h.requirement(s, typeStep, sc.path, sc.index)
			r.RequiresConfirmation, r.ConfirmationMessage = h.RequiresConfirmation, h.ConfirmationMessage
			r.RequiresUserInput, r.UserInputMessage, r.UserInputSchema = h.RequiresUserInput, h.UserInputMessage, h.UserInputSchema
			return run.StepOutput{}, false, x.ask(s, sc, r, run.EventStepPaused)
		}
		if a.Confirmed != nil && !*a.Confirmed {
			return x.rejected(s, sc, h)
		}
		userInput = a.UserInput
		e := x.stepEv(run.EventStepContinued, s, sc)
		x.send(e)
	}
	var feedback string
	if h != nil && h.RequiresOutputReview {
		if a, ok := x.j.answer(sc.path, true); ok && a.Confirmed != nil && !*a.Confirmed && x.onReject(h, sc) == OnRejectRetry {
			// The reviewer wants another try: run again with the note.
			if a.RetryCount >= h.maxRetries() {
				ferr := x.fail(sc, fmt.Sprintf("step %s: its output was rejected %d times (max_retries)", s.Name, a.RetryCount+1))
				x.sendStepError(s, sc, ferr)
				return run.StepOutput{}, false, ferr
			}
			feedback = cmp.Or(a.RejectionFeedback, "The previous output was rejected; try again.")
			x.j.dropReview(sc.path)
			x.j.retried(sc.path, a.RetryCount+1)
		} else if out, ok := x.j.reviewing(sc.path); ok {
			return x.review(ctx, s, sc, out, nil)
		}
	}
	out, err := x.runLeaf(ctx, s, sc, content, userInput, feedback)
	for err != nil && stepFailed(ctx, err) && x.j.retries(retryKey(sc.path)) < s.MaxRetries {
		x.j.retried(retryKey(sc.path), x.j.retries(retryKey(sc.path))+1)
		out, err = x.runLeaf(ctx, s, sc, content, userInput, feedback)
	}
	if err != nil {
		if errors.Is(err, errPaused) {
			return out, false, err
		}
		if s.SkipOnFailure && stepFailed(ctx, err) {
			// As OnError skip, in Agno's words.
			out.Content = fmt.Sprintf("Step %s failed but skipped", s.Name)
			x.j.complete(sc.path, out)
			return out, false, nil
		}
		if h != nil && stepFailed(ctx, err) {
			switch h.OnError {
			case OnErrorSkip:
				// It ran: a continue of the run replays the failure
				// instead of running the step again.
				x.j.complete(sc.path, out)
				return out, false, nil
			case OnErrorPause:
				return out, false, x.errorPause(s, sc, out, h, err)
			}
		}
		return out, false, err
	}
	if h != nil && h.RequiresOutputReview {
		return x.review(ctx, s, sc, out, nil)
	}
	x.finishLeaf(s, sc, out)
	return out, false, nil
}

// stepFailed reports whether err, a leaf step's, is the step's own failure
// (what MaxRetries, SkipOnFailure and OnError act on): not a pause, not the
// run's cancellation, not the storage or the fence failing under it.
func stepFailed(ctx context.Context, err error) bool {
	return ctx.Err() == nil && !errors.Is(err, errPaused) && !errors.Is(err, agent.ErrStorage) && !errors.Is(err, run.ErrFenced)
}

func (x *exec) finishLeaf(s *Step, sc scope, out run.StepOutput) {
	x.j.complete(sc.path, out)
	x.record(out)
	e := x.stepEv(run.EventStepCompleted, s, sc)
	e.Content, e.ContentType = out.Content, "str"
	x.send(e)
}

// review pauses for a person to review out, or applies their answer.
func (x *exec) review(_ context.Context, s *Step, sc scope, out run.StepOutput, _ any) (run.StepOutput, bool, error) {
	h := s.HumanReview
	a, ok := x.j.answer(sc.path, true)
	if !ok || a.Confirmed == nil || (!*a.Confirmed && x.onReject(h, sc) == OnRejectRetry) {
		x.j.keepReview(sc.path, out)
		r := h.requirement(s, out.StepType, sc.path, sc.index)
		r.RequiresOutputReview, r.OutputReviewMessage, r.IsPostExecution = true, cmp.Or(h.OutputReviewMessage, "Review the output of "+s.Name), true
		o := out
		r.StepOutput = &o
		r.RetryCount = x.j.retries(sc.path)
		mr := h.maxRetries()
		r.MaxRetries = &mr
		return out, false, x.ask(s, sc, r, run.EventStepOutputReview)
	}
	x.j.dropReview(sc.path)
	if !*a.Confirmed {
		return x.rejected(s, sc, h)
	}
	if a.EditedOutput != nil {
		out.Content = a.EditedOutput
	}
	if out.StepType == typeStep {
		x.finishLeaf(s, sc, out)
	} else {
		x.j.complete(sc.path, out)
		x.record(out)
	}
	return out, false, nil
}

// errorPause pauses the run at a failed step for a person to decide:
// retry it, skip it or cancel the run (HumanReview on_error pause). After
// MaxRetries retries the step fails the run.
func (x *exec) errorPause(s *Step, sc scope, out run.StepOutput, h *HumanReview, err error) error {
	n := x.j.retries(errorKey(sc.path))
	if n >= h.maxRetries() {
		return err
	}
	i := sc.index
	r := run.ErrorRequirement{StepID: sc.path, StepName: s.Name, StepIndex: &i, ErrorMessage: cmp.Or(out.Error, err.Error()),
		ErrorType: "StepError", RetryCount: n}
	x.mu.Lock()
	x.errs = append(x.errs, r)
	x.mu.Unlock()
	e := x.stepEv(run.EventStepPaused, s, sc)
	e.Content = r.ErrorMessage
	x.send(e)
	return errPaused
}

// stepRunNS derives the run ids of a workflow run's steps.
var stepRunNS = uuid.MustParse("6f1b2c7e-3d4a-5b6c-8d9e-0a1b2c3d4e5f")

// stepRunID is the run id of the agent or team run of the step at path:
// derived from the workflow run id, the step's path (which names loop
// iterations and parallel branches) and how often the step was retried,
// so that a workflow run resumed after a crash runs (and replays) the same
// step runs.
func (x *exec) stepRunID(path string) string {
	return uuid.NewSHA1(stepRunNS, fmt.Appendf(nil, "%s/%s/%d", x.out.RunID, path, x.tries(path))).String()
}

// tries counts the runs of the leaf step at path before this one: its
// output rejected and retried, its failure retried by a person (OnError
// pause) or by MaxRetries. Each run has its own step run id and journal
// step.
func (x *exec) tries(path string) int {
	return x.j.retries(path) + x.j.retries(errorKey(path)) + x.j.retries(retryKey(path))
}

// journaledStep is a leaf step's record in the workflow run's journal.
type journaledStep struct {
	Output run.StepOutput `json:"output"`
	// State is the session state after the step (a replay merges what the
	// step changed).
	State map[string]any `json:"state,omitempty"`
}

// runLeaf runs the step once, through the run's journal when it has one:
// a step recorded by an earlier attempt is replayed (its function is not
// called again, its agent or team not run again).
func (x *exec) runLeaf(ctx context.Context, s *Step, sc scope, content any, userInput map[string]any, feedback string) (run.StepOutput, error) {
	if x.jr == nil {
		return x.execLeaf(ctx, s, sc, content, userInput, feedback)
	}
	key := fmt.Sprintf("step:%s#%d", sc.path, x.tries(sc.path))
	var out run.StepOutput
	ran := false
	before := x.state.Snapshot()
	raw, err := x.jr.Do(ctx, run.JournalStep{RunID: x.out.RunID, Key: key, Kind: "step", Attempt: x.attempt, Idempotent: true},
		func(ctx context.Context) (json.RawMessage, error) {
			ran = true
			var err error
			out, err = x.execLeaf(run.WithIdempotencyKey(ctx, x.out.RunID+":"+key), s, sc, content, userInput, feedback)
			if err != nil {
				return nil, err
			}
			return json.Marshal(journaledStep{Output: out, State: x.state.Snapshot()})
		})
	switch {
	case ran:
		return out, err
	case err != nil:
		// The journal itself failed (fenced, storage): the step did not run.
		x.fail(sc, fmt.Sprintf("step %s: its journal could not be read or written", s.Name))
		return run.StepOutput{StepName: s.Name, StepID: sc.path, StepType: typeStep}, fmt.Errorf("step %s: %w", s.Name, err)
	}
	var rec journaledStep
	if err := json.Unmarshal(raw, &rec); err != nil {
		x.fail(sc, fmt.Sprintf("step %s: its journal record does not decode", s.Name))
		return run.StepOutput{StepName: s.Name, StepID: sc.path, StepType: typeStep}, fmt.Errorf("step %s: journal record: %w", s.Name, err)
	}
	x.mergeState(before, rec.State)
	x.recordMetrics(rec.Output)
	x.noteStepRun(rec.Output.StepRunID)
	return rec.Output, nil
}

// noteStepRun remembers a step run journaled with the run's journal, whose
// journal is cleared when the workflow run ends.
func (x *exec) noteStepRun(id string) {
	if x.jr == nil || id == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stepRuns = append(x.stepRuns, id)
}

// fence claims the run for this attempt (run.Fencer): a superseded attempt
// neither starts nor saves.
func (x *exec) fence() error {
	f, ok := x.jr.(run.Fencer)
	if !ok {
		return nil
	}
	if err := f.Fence(context.WithoutCancel(x.ctx), x.out.RunID, x.attempt); err != nil {
		return fmt.Errorf("workflow: run %s: %w", x.out.RunID, err)
	}
	return nil
}

// clearStepJournals deletes the journals of the run's step runs once the
// workflow run ended (the queue clears the workflow run's own).
func (x *exec) clearStepJournals() {
	c, ok := x.jr.(interface {
		ClearJournal(ctx context.Context, runID string) error
	})
	if !ok {
		return
	}
	x.mu.Lock()
	ids := slices.Clone(x.stepRuns)
	x.mu.Unlock()
	for _, id := range ids {
		if err := c.ClearJournal(context.WithoutCancel(x.ctx), id); err != nil {
			slog.Warn("workflow: clearing a step run's journal failed", "run_id", x.out.RunID, "step_run_id", id, "error", err)
		}
	}
}

// execLeaf runs the step's runner or function once.
func (x *exec) execLeaf(ctx context.Context, s *Step, sc scope, content any, userInput map[string]any, feedback string) (run.StepOutput, error) {
	out := run.StepOutput{StepName: s.Name, StepID: sc.path, StepType: typeStep}
	started := x.stepEv(run.EventStepStarted, s, sc)
	x.send(started)
	var err error
	var status run.Status
	if s.Func != nil {
		out.ExecutorType, out.ExecutorName = "function", s.Name
		in := x.stepInput(content)
		in.UserInput, in.RejectionFeedback = userInput, feedback
		var fr FuncResult
		fr, err = callFunc(ctx, s.Func, in)
		status = run.StatusCompleted
		out.Content, out.Stop = fr.Content, fr.Stop
	} else {
		c := s.Runner.Component()
		out.ExecutorType, out.ExecutorName = string(c.Type), cmp.Or(c.Name, c.ID)
		out.StepRunID = x.stepRunID(sc.path)
		text := run.ContentText(content)
		if content == nil {
			text = ""
		}
		if len(userInput) > 0 {
			b, _ := json.Marshal(userInput)
			text += "\n\nUser input: " + string(b)
		}
		if feedback != "" {
			text += "\n\nFeedback on the previous attempt: " + feedback
		}
		var paused *run.Output
		status, paused, err = x.callRunner(ctx, s, sc, text, &out)
		if err == nil && status == run.StatusPaused && paused != nil {
			x.recordMetrics(out)
			return out, x.executorPause(s, sc, paused)
		}
		x.j.dropExecutor(sc.path)
		x.noteStepRun(out.StepRunID)
	}
	x.recordMetrics(out)
	if err == nil && status != run.StatusCompleted {
		err = fmt.Errorf("step %s ended %s: %v", s.Name, status, out.Content)
		if status == run.StatusPaused {
			err = fmt.Errorf("step %s paused and its runner (%T) cannot be continued by a workflow", s.Name, s.Runner)
		}
	} else if err != nil {
		err = fmt.Errorf("step %s: %w", s.Name, err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return out, context.Cause(ctx)
		}
		ft := err.Error()
		if errors.Is(err, agent.ErrStorage) {
			// The storage error's own text may name the database's host and
			// user: events and the stored run get this, the caller the error.
			ft = fmt.Sprintf("step %s: storage error: its session could not be read or its run could not be saved", s.Name)
			out.Content = ft
		}
		x.mu.Lock()
		x.noteFail(sc.path, ft)
		x.mu.Unlock()
		f := false
		// A failed step stops nothing (skipped on error, the run goes on).
		out.Success, out.Error, out.Stop = &f, ft, false
		e := x.stepEv(run.EventStepError, s, sc)
		e.Content, e.Error = ft, ft
		x.send(e)
		return out, err
	}
	t := true
	out.Success = &t
	return out, nil
}

func callFunc(ctx context.Context, f StepFunc, in *StepInput) (res FuncResult, err error) {
	return guard("the function", func() (FuncResult, error) { return f(ctx, in) })
}

// callRunner is runRunner with a panic of the runner (any agent.Runner)
// turned into the step's error.
func (x *exec) callRunner(ctx context.Context, s *Step, sc scope, input string, out *run.StepOutput) (st run.Status, paused *run.Output, err error) {
	defer func() {
		if p := recover(); p != nil {
			st, paused, err = "", nil, fmt.Errorf("its runner panicked: %v", p)
		}
	}()
	return x.runRunner(ctx, s, sc, input, out)
}

// guard calls f, the Go code of a step (its function, a condition's
// evaluator, a router's selector, a loop's end condition), turning a
// panic into an error naming what panicked: the run then fails as for any
// error of the step, instead of staying RUNNING, or, in a parallel
// branch's goroutine, ending the process.
func guard[T any](what string, f func() (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, fmt.Errorf("%s panicked: %v", what, p)
		}
	}()
	return f()
}

// continuer is a runner whose paused runs a workflow continues: an agent
// or a team.
type continuer interface {
	ContinueRun(ctx context.Context, paused *run.Output, opts ...agent.RunOption) (*run.Output, error)
}

// executorPause pauses the run at a step whose agent or team paused for a
// tool: the step's requirement carries the executor run's unresolved
// requirements, and the journal keeps the paused run to continue.
func (x *exec) executorPause(s *Step, sc scope, paused *run.Output) error {
	x.j.keepExecutor(sc.path, paused)
	c := s.Runner.Component()
	i := sc.index
	r := run.StepRequirement{StepID: sc.path, StepName: s.Name, StepIndex: &i, StepType: typeStep, RequiresExecutorInput: true,
		ExecutorID: c.ID, ExecutorName: cmp.Or(c.Name, c.ID), ExecutorRunID: paused.RunID, ExecutorType: string(c.Type),
		ExecutorSessionID: paused.SessionID}
	for _, q := range paused.Requirements {
		if !q.Resolved() {
			r.ExecutorRequirements = append(r.ExecutorRequirements, q)
		}
	}
	if s.HumanReview != nil {
		r.OnReject = s.HumanReview.onReject()
	}
	x.mu.Lock()
	x.pending = append(x.pending, r)
	x.j.forget(r)
	x.mu.Unlock()
	e := x.stepEv(run.EventStepExecutorPaused, s, sc)
	e.ExecutorID, e.ExecutorName, e.ExecutorRunID, e.ExecutorType = r.ExecutorID, r.ExecutorName, r.ExecutorRunID, r.ExecutorType
	e.ExecutorRequirements, e.StepRequirements = r.ExecutorRequirements, []run.StepRequirement{r}
	x.send(e)
	return errPaused
}

// runRunner runs an agent, team or workflow step, streamed when the
// workflow run is, and merges the session state it leaves. An agent or
// team step that paused for a tool returns its paused run; one whose
// paused run was answered is continued instead of run anew.
func (x *exec) runRunner(ctx context.Context, s *Step, sc scope, input string, out *run.StepOutput) (run.Status, *run.Output, error) {
	r := s.Runner
	// The run gets a copy of its own; snap stays as it was given, for
	// mergeState to see what the run changed (a runner may change the
	// nested values of the map it got in place).
	snap := x.state.Snapshot()
	given := cloneMap(snap)
	// The step's run id is given below: a new run's is out.StepRunID, a
	// continued run keeps its paused run's (a continue refuses another).
	opts := []agent.RunOption{agent.WithSessionID(x.out.SessionID), agent.WithUserID(x.out.UserID),
		agent.WithParentRunID(x.out.RunID), agent.WithWorkflowStepID(sc.path), agent.WithSessionState(given), x.stepStorage()}
	if x.deps != nil {
		opts = append(opts, agent.WithDependencies(x.deps))
	}
	if x.jr != nil {
		opts = append(opts, agent.WithJournal(x.jr, x.attempt))
	}
	cr, continues := r.(continuer)
	_, nested := r.(*Workflow)
	// A workflow step is run as agents and teams are, its events passed on
	// through WithEventFunc: its run's output carries the session state it
	// leaves, which its WorkflowCompleted event does not (Agno's has none).
	if continues || nested {
		if x.emit != nil {
			opts = append(opts, agent.WithEventFunc(x.send))
		}
		var so *run.Output
		var err error
		if paused := x.j.executor(sc.path); paused != nil && continues {
			a, answered := x.j.executorAnswer(sc.path)
			if !answered {
				return run.StatusPaused, paused, nil
			}
			out.StepRunID = paused.RunID
			e := x.stepEv(run.EventStepExecutorContinued, s, sc)
			e.ExecutorID, e.ExecutorName, e.ExecutorRunID, e.ExecutorType = paused.AgentID, out.ExecutorName, paused.RunID, out.ExecutorType
			if paused.TeamID != "" {
				e.ExecutorID = paused.TeamID
			}
			x.send(e)
			so, err = cr.ContinueRun(ctx, paused, append(opts, agent.WithRequirements(a.ExecutorRequirements))...)
		} else {
			so, err = r.Run(ctx, run.TextInput(input), append(opts, agent.WithRunID(out.StepRunID))...)
		}
		if so == nil {
			return "", nil, err
		}
		out.Content, out.Metrics = so.Content, so.Metrics
		x.mergeState(snap, so.SessionState)
		if !errors.Is(err, agent.ErrStorage) && !errors.Is(err, run.ErrFenced) {
			err = nil
		}
		if so.Status == run.StatusPaused && continues {
			return so.Status, so, err
		}
		if nw, ok := r.(*Workflow); ok && so.Status == run.StatusPaused {
			// This run cannot continue a nested workflow's pause (the step
			// fails): left PAUSED, the nested run could still be approved
			// and continued after the run it belongs to ended.
			nw.abandonPaused(context.WithoutCancel(ctx), so.RunID, fmt.Sprintf("it paused as step %s of workflow run %s, which cannot continue it", s.Name, x.out.RunID))
		}
		return so.Status, nil, err
	}
	opts = append(opts, agent.WithRunID(out.StepRunID))
	if x.emit == nil {
		so, err := r.Run(ctx, run.TextInput(input), opts...)
		if so == nil {
			return "", nil, err
		}
		out.Content, out.Metrics = so.Content, so.Metrics
		x.mergeState(snap, so.SessionState)
		if !errors.Is(err, agent.ErrStorage) && !errors.Is(err, run.ErrFenced) {
			err = nil
		}
		return so.Status, nil, err
	}
	c := r.Component()
	completed, failed := c.EventName(run.EventRunCompleted), c.EventName(run.EventRunError)
	cancelled, paused := c.EventName(run.EventRunCancelled), c.EventName(run.EventRunPaused)
	var status run.Status
	for ev, err := range r.Stream(ctx, run.TextInput(input), opts...) {
		if err != nil {
			return status, nil, err
		}
		switch ev.Event {
		case completed:
			status, out.Content, out.Metrics = run.StatusCompleted, ev.Content, ev.Metrics
			x.mergeState(snap, ev.SessionState)
		case failed:
			status, out.Content = run.StatusError, ev.Content
		case cancelled:
			status, out.Content = run.StatusCancelled, ev.Reason
		case paused:
			status = run.StatusPaused
		}
		x.send(ev)
		if ctx.Err() != nil {
			return status, nil, context.Cause(ctx)
		}
	}
	if status == "" {
		return status, nil, errors.New("the step ended without a final event")
	}
	return status, nil, nil
}

// mergeState takes the keys a step's run changed into the workflow state.
func (x *exec) mergeState(before, after map[string]any) {
	if after == nil {
		return
	}
	x.state.Update(func(m map[string]any) {
		for k, v := range after {
			if old, ok := before[k]; !ok || !jsonEqual(old, v) {
				m[k] = v
			}
		}
	})
}

func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// start reads or creates the session (and its state) and writes the RUNNING
// run row, so steps find their session and readers see the run while it
// executes. It writes even when the run is already cancelled (like an
// agent's run): the steps then end it CANCELLED without starting a step,
// and whoever cancelled it finds it stored so.
func (x *exec) start(extra map[string]any) error {
	d := x.w.cfg.DB
	state := map[string]any{}
	if d != nil {
		ctx := context.WithoutCancel(x.ctx)
		// Read, and created when missing, in a turn of the session's line:
		// a run of it that wrote in between is not written over.
		// Created only where no row exists (db.ExpectNoRow): another
		// process that created it in between makes Update read it again.
		claimed := true
		err := sessionline.Default().Update(sessionline.Key{DB: d, ID: x.out.SessionID}, func() (*db.Session, error) {
			// A durable background run's claim read the session row already
			// (taken once: a retry reads the row).
			var s *db.Session
			ok := false
			if claimed {
				s, ok = db.ClaimedSession(ctx, x.out.RunID, x.out.SessionID)
				claimed = false
			}
			var err error
			if !ok {
				s, err = d.GetSession(ctx, x.out.SessionID)
			}
			switch {
			case errors.Is(err, db.ErrNotFound):
				s, err = d.UpsertSession(ctx, &db.Session{SessionID: x.out.SessionID, SessionType: run.TypeWorkflow,
					WorkflowID: x.w.cfg.ID, UserID: x.out.UserID, WorkflowData: x.w.data, Expect: db.ExpectOf(nil)})
				if err != nil {
					return nil, fmt.Errorf("workflow: %w: create session %s: %w", agent.ErrStorage, x.out.SessionID, err)
				}
				return s, nil
			case err != nil:
				return nil, fmt.Errorf("workflow: %w: load session %s: %w", agent.ErrStorage, x.out.SessionID, err)
			default:
				if st := sessionState(s); st != nil {
					state = st
				}
				return nil, nil
			}
		})
		if err != nil {
			return err
		}
	}
	// The steps change state in place: what the run read is kept apart.
	x.readState, x.over = cloneMap(state), extra
	maps.Copy(state, extra)
	x.state = newState(state)
	if d == nil {
		return nil
	}
	if err := x.upsert(context.WithoutCancel(x.ctx), d, nil); err != nil {
		return fmt.Errorf("workflow: %w: store run %s: %w", agent.ErrStorage, x.out.RunID, err)
	}
	return nil
}

func sessionState(s *db.Session) map[string]any {
	if len(s.SessionData) == 0 {
		return nil
	}
	m, _ := db.SessionStateOf(s.SessionData)
	return m
}

// save stores the run (with its journal when it pauses) and the session
// state, with a context that is not cancelled.
func (x *exec) save(j *journal) error {
	d := x.w.cfg.DB
	x.out.SessionState = x.state.Snapshot()
	if d == nil {
		return nil
	}
	ctx := context.WithoutCancel(x.ctx)
	x.out.UpdatedAt = time.Now().Unix()
	share, err := x.saveState(ctx, d)
	if err != nil {
		return fmt.Errorf("workflow: %w: save session %s: %w", agent.ErrStorage, x.out.SessionID, err)
	}
	x.counted = share // the session holds it now
	if err := x.upsert(ctx, d, j); err != nil {
		return fmt.Errorf("workflow: %w: save run %s: %w", agent.ErrStorage, x.out.RunID, err)
	}
	return nil
}

// saveState stores the session's state and adds to its metrics what the
// run has not added yet (its steps' tokens: run.RunShare); it returns the
// run's share, which the session then holds. A nested
// workflow's run (with a parent) adds nothing: its parent's steps hold it.
func (x *exec) saveState(ctx context.Context, d *db.DB) (share *run.SessionMetrics, err error) {
	// Read and written in a turn of the session's line: a run of the
	// session that wrote since this one read it is not written over.
	err = sessionline.Default().Update(sessionline.Key{DB: d, ID: x.out.SessionID}, func() (*db.Session, error) {
		s, err := d.GetSession(ctx, x.out.SessionID)
		if err != nil {
			return nil, err
		}
		// Written only over the row read (a compare-and-set): another
		// process's write in between makes Update read it again.
		expect := db.ExpectOf(s)
		if share, err = x.sessionToSave(s); err != nil {
			return nil, err
		}
		s.Expect = expect
		return d.UpsertSession(ctx, s)
	})
	return share, err
}

// sessionToSave makes s, the stored session row, the row the run leaves:
// its state with the run's changes over it, its metrics with what the run
// has not added yet. It returns the run's share.
func (x *exec) sessionToSave(s *db.Session) (*run.SessionMetrics, error) {
	var share, add run.SessionMetrics
	if x.out.ParentRunID == "" {
		share = run.RunShare(x.out.Metrics, nil)
		add = share.Since(x.counted)
	}
	state := sessionline.MergeState(x.readState, x.out.SessionState, x.over, sessionState(s))
	data, kept, err := run.UpdateSessionData(s.SessionData, state, &add)
	if err != nil {
		return nil, err
	}
	if kept != nil {
		slog.Warn("workflow: the session's metrics are not updated", "session_id", x.out.SessionID, "run_id", x.out.RunID, "error", kept)
	}
	s.SessionData = data
	return &share, nil
}

func (x *exec) upsert(ctx context.Context, d *db.DB, j *journal) error {
	stored, mediaErr := x.storedForm(ctx)
	out := *stored
	out.Extra = maps.Clone(stored.Extra)
	delete(out.Extra, journalKey)
	if j != nil {
		b, err := json.Marshal(j)
		if err != nil {
			return err
		}
		if out.Extra == nil {
			out.Extra = map[string]json.RawMessage{}
		}
		out.Extra[journalKey] = b
	}
	row, err := db.RunFromOutput(&out)
	if err == nil {
		_, err = d.UpsertRun(ctx, row)
	}
	return errors.Join(mediaErr, err)
}
