package agent

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/agentryhq/agentry/run"
)

// Run executes one run and returns it. The output is non-nil whenever the run
// started; err is non-nil when it ended in ERROR (wrapping the cause, also in
// the output's content) or CANCELLED (wrapping the context's error), or when
// persisting it failed (wrapping ErrStorage: the output is then not stored).
// A run whose session or history cannot be read does not start: nil output,
// an error wrapping ErrStorage; nor does a run whose id is executing in this
// process already: nil output, an error wrapping run.ErrAlreadyRunning; nor
// does a run given an option the agent cannot honour: nil output, an
// *UnsupportedOptionError (see CheckOptions). A PAUSED run returns a nil
// error: resolve its requirements and call ContinueRun.
func (a *Agent) Run(ctx context.Context, input run.Input, opts ...RunOption) (*run.Output, error) {
	st, err := a.newState(ctx, opts, false)
	if err != nil {
		return nil, err
	}
	st.useEventFunc()
	if err := st.begin(ctx); err != nil {
		return nil, err
	}
	defer st.end()
	st.guard(func() { st.runNew(input) })
	if err := st.startError(); err != nil {
		return nil, err
	}
	return st.out, st.result()
}

// Stream executes one run and yields its events (Agno's names and fields).
// Failures of the run are events (RunError, RunCancelled), not errors; the
// error is non-nil only when the run cannot start (invalid options, session
// or history unreadable, run id executing already: it is then the only value
// yielded) or could not be
// persisted (the run then ends with a RunError of error_type StorageError
// instead of its terminal event, and the error, wrapping ErrStorage, is the
// last value yielded). Breaking out of the
// loop cancels the run, which ends CANCELLED and is persisted. Each range over
// the returned sequence starts a new run.
func (a *Agent) Stream(ctx context.Context, input run.Input, opts ...RunOption) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		st, err := a.newState(ctx, opts, false)
		if err != nil {
			yield(run.Event{}, err)
			return
		}
		st.stream(ctx, yield, func() { st.runNew(input) })
	}
}

// ContinueRun resumes a PAUSED run the caller holds, after its requirements were
// resolved in place (Tools/Requirements: Confirmed, Answered with ToolArgs, or
// Result for external execution) or through WithTools / WithRequirements.
// Continuing a run that is not PAUSED returns run.ErrNotContinuable. The run
// continues in its paused run's session, with its run, user and parent run
// ids: WithRunID, WithSessionID, WithUserID or WithParentRunID naming
// another is refused (CheckContinuedIDs), as is an option the agent cannot
// honour in Run.
func (a *Agent) ContinueRun(ctx context.Context, paused *run.Output, opts ...RunOption) (*run.Output, error) {
	st, err := a.continueState(ctx, paused, opts)
	if err != nil {
		return nil, err
	}
	st.useEventFunc()
	if err := st.begin(ctx); err != nil {
		return nil, err
	}
	defer st.end()
	st.guard(st.runContinued)
	if err := st.startError(); err != nil {
		return nil, err
	}
	return st.out, st.result()
}

// ContinueRunID loads a PAUSED run from the DB and resumes it like ContinueRun;
// resolutions come from WithTools or WithRequirements.
func (a *Agent) ContinueRunID(ctx context.Context, runID string, opts ...RunOption) (*run.Output, error) {
	paused, err := a.loadRun(ctx, runID)
	if err != nil {
		return nil, err
	}
	return a.ContinueRun(ctx, paused, opts...)
}

// ContinueStream is ContinueRun yielding events, starting with RunContinued.
func (a *Agent) ContinueStream(ctx context.Context, paused *run.Output, opts ...RunOption) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		st, err := a.continueState(ctx, paused, opts)
		if err != nil {
			yield(run.Event{}, err)
			return
		}
		st.stream(ctx, yield, st.runContinued)
	}
}

// ContinueStreamID is ContinueRunID yielding events.
func (a *Agent) ContinueStreamID(ctx context.Context, runID string, opts ...RunOption) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		paused, err := a.loadRun(ctx, runID)
		if err != nil {
			yield(run.Event{}, err)
			return
		}
		for ev, err := range a.ContinueStream(ctx, paused, opts...) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// stream executes body as st's run with its events going to yield (and
// first to WithEventFunc's function); a failure to persist the run is the
// last value yielded.
func (st *state) stream(ctx context.Context, yield func(run.Event, error) bool, body func()) {
	if fn := st.opts.get().eventFunc; fn != nil {
		next := yield
		yield = func(e run.Event, err error) bool {
			if err == nil {
				fn(e)
			}
			return next(e, err)
		}
	}
	st.sink.yield = yield
	if err := st.begin(ctx); err != nil {
		yield(run.Event{}, err)
		return
	}
	defer st.end()
	st.guard(body)
	switch {
	case st.startError() != nil:
		yield(run.Event{}, st.startError())
	case st.persistErr != nil && st.sink.live():
		yield(run.Event{}, st.persistErr)
	}
}

func (a *Agent) loadRun(ctx context.Context, runID string) (*run.Output, error) {
	if a.conf().DB == nil {
		return nil, errors.New("agent: continuing a run by id needs Config.DB; pass the paused *run.Output instead")
	}
	row, err := a.conf().DB.GetRun(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("agent: load run %s: %w", runID, err)
	}
	return row.Output()
}

// result is the error Run returns for the final state.
func (st *state) result() error {
	var err error
	switch st.out.Status {
	case run.StatusError:
		err = fmt.Errorf("agent: run %s failed: %w", st.out.RunID, st.err)
	case run.StatusCancelled:
		err = fmt.Errorf("agent: run %s cancelled: %w", st.out.RunID, st.err)
	}
	return errors.Join(err, st.persistErr)
}
