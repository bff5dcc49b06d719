package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/run"
)

// Step statuses of the journal.
const (
	// StepStarted: the step began and has no recorded result (yet).
	StepStarted = "started"
	// StepDone: the step's result is recorded.
	StepDone = "done"
)

// RunStep is one row of the step journal (agentry_run_steps, Agentry's own
// table: Agno readers ignore it). A run's steps are keyed by StepKey
// ("model:N", "tool:CALL_ID"); Attempt is the attempt that last wrote it.
type RunStep struct {
	RunID     string
	StepKey   string
	Kind      string
	Attempt   int
	Status    string
	Request   json.RawMessage
	Result    json.RawMessage
	CreatedAt int64
	UpdatedAt int64
}

// StepJournalDriver is the optional ability to keep the step journal of
// durable runs. Every write is fenced: it first raises the run's attempt to
// the step's (atomically, under a row lock of the run's fence row) and fails
// with run.ErrFenced when a newer attempt already wrote.
type StepJournalDriver interface {
	// BeginStep returns the stored step (s.RunID, s.StepKey) when it is
	// done, or when it was started and idempotent is false. Otherwise it
	// records s as started by s.Attempt and returns nil.
	BeginStep(ctx context.Context, s *RunStep, idempotent bool) (*RunStep, error)
	// GetStep returns a stored step (nil when there is none) and the run's
	// fence: the highest attempt that wrote (0 when none did). One read.
	GetStep(ctx context.Context, runID, stepKey string) (step *RunStep, fence int, err error)
	// FinishStep records s.Result and marks the step done.
	FinishStep(ctx context.Context, s *RunStep) error
	// RunSteps returns a run's steps ordered by key (inspection and tests).
	RunSteps(ctx context.Context, runID string) ([]RunStep, error)
	// ClearRunSteps deletes a run's steps and its fence.
	ClearRunSteps(ctx context.Context, runID string) error
}

// ErrNoJournal is returned by NewJournal for a driver without a step journal.
var ErrNoJournal = errors.New("db: this database driver keeps no step journal")

// Journal is the run.Journal kept in a database's agentry_run_steps table.
// The queue builds one per database (NewJournal) and passes it, with the
// job's attempt, to agent.WithJournal; it calls ClearJournal once the run is
// COMPLETED, ERROR or CANCELLED.
type Journal struct {
	d  *DB
	jd StepJournalDriver
}

var _ run.Journal = (*Journal)(nil)

// NewJournal returns the step journal of d, or ErrNoJournal.
func NewJournal(d *DB) (*Journal, error) {
	jd, ok := d.driver.(StepJournalDriver)
	if !ok {
		return nil, fmt.Errorf("%w (%s)", ErrNoJournal, d.driver.Dialect())
	}
	return &Journal{d: d, jd: jd}, nil
}

func checkStep(s run.JournalStep) error {
	switch {
	case s.RunID == "" || len(s.RunID) > 255:
		return fmt.Errorf("%w: a journal step needs a run id of 1 to 255 bytes", ErrInvalidRecord)
	case s.Key == "" || len(s.Key) > 255:
		return fmt.Errorf("%w: a journal step needs a key of 1 to 255 bytes", ErrInvalidRecord)
	case s.Attempt < 1:
		return fmt.Errorf("%w: a journal step's attempt starts at 1, got %d", ErrInvalidRecord, s.Attempt)
	}
	return nil
}

// Do implements run.Journal: a recorded result is returned without calling
// fn; a step an earlier attempt started without recording a result is run
// again when s.Idempotent, else it fails with run.ErrStepInterrupted. fn's
// result is recorded only when fn succeeds. A write of a superseded attempt
// fails with run.ErrFenced (fn's result is then dropped); a replay is a
// read and is not fenced (it changes nothing).
//
// Cost: an idempotent step is one read and one fenced write transaction;
// a non-idempotent one adds the fenced write of its "started" mark first.
func (j *Journal) Do(ctx context.Context, s run.JournalStep, fn func(context.Context) (json.RawMessage, error)) (json.RawMessage, error) {
	if err := checkStep(s); err != nil {
		return nil, err
	}
	row := &RunStep{RunID: s.RunID, StepKey: s.Key, Kind: s.Kind, Attempt: s.Attempt, Status: StepStarted, Request: s.Request}
	now := j.d.now().Unix()
	row.CreatedAt, row.UpdatedAt = now, now
	var old *RunStep
	var err error
	bctx, call := j.d.bound(ctx)
	if s.Idempotent {
		// A step that may run again needs no "started" mark: one read
		// replays it, and its result's write is the fenced one.
		var fence int
		if !fresh(ctx, s.RunID, s.Attempt, s.Key) {
			old, fence, err = j.jd.GetStep(bctx, s.RunID, s.Key)
		}
		if old != nil && old.Status != StepDone {
			old = nil
		}
		if err == nil && old == nil && fence > s.Attempt {
			// Not atomic (the write after fn is), but it spares a
			// superseded worker a step whose result would be dropped.
			err = fmt.Errorf("%w: run %s is at attempt %d, this is attempt %d", run.ErrFenced, s.RunID, fence, s.Attempt)
		}
	} else {
		old, err = j.jd.BeginStep(j.stepCtx(bctx), row, false)
	}
	if err = call.done(err); err != nil {
		return nil, err
	}
	if old != nil {
		if old.Status == StepDone {
			return old.Result, nil
		}
		return nil, fmt.Errorf("%w: step %s of run %s (started by attempt %d)", run.ErrStepInterrupted, s.Key, s.RunID, old.Attempt)
	}
	res, err := fn(ctx)
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = json.RawMessage("null")
	}
	row.Status, row.Result, row.UpdatedAt = StepDone, res, j.d.now().Unix()
	bctx, call = j.d.bound(ctx)
	if err := call.done(j.jd.FinishStep(j.stepCtx(bctx), row)); err != nil {
		return nil, err
	}
	return res, nil
}

var _ run.LazyJournal = (*Journal)(nil)

// DoLazy implements run.LazyJournal: Do for an idempotent step (a
// non-idempotent one is plain Do, recorded at once), whose result's fenced
// write is the returned record, nil when the step was replayed.
func (j *Journal) DoLazy(ctx context.Context, s run.JournalStep, fn func(context.Context) (json.RawMessage, error)) (json.RawMessage, func(context.Context) error, error) {
	if !s.Idempotent {
		res, err := j.Do(ctx, s, fn)
		return res, nil, err
	}
	if err := checkStep(s); err != nil {
		return nil, nil, err
	}
	var old *RunStep
	var fence int
	if !fresh(ctx, s.RunID, s.Attempt, s.Key) {
		bctx, call := j.d.bound(ctx)
		var err error
		old, fence, err = j.jd.GetStep(bctx, s.RunID, s.Key)
		if err = call.done(err); err != nil {
			return nil, nil, err
		}
	}
	if old != nil && old.Status == StepDone {
		return old.Result, nil, nil
	}
	if fence > s.Attempt {
		return nil, nil, fmt.Errorf("%w: run %s is at attempt %d, this is attempt %d", run.ErrFenced, s.RunID, fence, s.Attempt)
	}
	res, err := fn(ctx)
	if err != nil {
		return nil, nil, err
	}
	if res == nil {
		res = json.RawMessage("null")
	}
	now := j.d.now().Unix()
	row := &RunStep{RunID: s.RunID, StepKey: s.Key, Kind: s.Kind, Attempt: s.Attempt, Status: StepDone, Request: s.Request, Result: res,
		CreatedAt: now, UpdatedAt: now}
	record := func(ctx context.Context) error {
		row.UpdatedAt = j.d.now().Unix()
		bctx, call := j.d.bound(ctx)
		return call.done(j.jd.FinishStep(j.stepCtx(bctx), row))
	}
	return res, record, nil
}

// Fence raises the run's attempt to attempt, or fails with run.ErrFenced
// when a newer attempt has written. An agent run with WithJournal calls it
// when it starts (claiming the run: from then on an older attempt's writes
// fail). It reads the fence first: when the run is at attempt already (the
// durable queue raises it in the transaction that claims the job) it writes
// nothing; otherwise it records a step "fence:attempt", which raises it.
//
// The check before the run's saves is TxFence (inside the save's
// transaction); Fence is the fallback of a journal on another database.
func (j *Journal) Fence(ctx context.Context, runID string, attempt int) error {
	if err := checkStep(run.JournalStep{RunID: runID, Key: fenceProbe, Attempt: attempt}); err != nil {
		return err
	}
	if fresh(ctx, runID, attempt, "") {
		return nil // the claim raised it to attempt, or (a first attempt's) left it to no attempt
	}
	bctx, call := j.d.bound(ctx)
	_, fence, err := j.jd.GetStep(bctx, runID, fenceProbe)
	switch err = call.done(err); {
	case err != nil:
		return err
	case fence > attempt:
		return fmt.Errorf("%w: run %s is at attempt %d, this is attempt %d", run.ErrFenced, runID, fence, attempt)
	case fence == attempt:
		return nil
	}
	now := j.d.now().Unix()
	row := &RunStep{RunID: runID, StepKey: fenceProbe, Kind: "fence", Attempt: attempt, Status: StepDone, CreatedAt: now, UpdatedAt: now,
		Result: json.RawMessage("null")}
	bctx, call = j.d.bound(ctx)
	return call.done(j.jd.FinishStep(j.stepCtx(bctx), row))
}

// TxStepFencer is the optional ability of a StepJournalDriver to raise and
// check a run's fence (as every fenced journal write does) inside the
// caller's write transaction: the statements of TxFence.
type TxStepFencer interface {
	// FenceTx raises the fence of runID to attempt in tx and holds it
	// until tx ends, or fails with run.ErrFenced when a newer attempt
	// holds it.
	FenceTx(ctx context.Context, tx *sql.Tx, runID string, attempt int, now int64) error
	// ClearRunStepsTx is ClearRunSteps in tx.
	ClearRunStepsTx(ctx context.Context, tx *sql.Tx, runID string) error
}

// TxFencer is the optional ability of a run.Journal to check an attempt's
// fence inside the transaction of a run write on d (WithWriteFence), so
// that the check and the write are one: a newer attempt that claims the run
// after the check waits for the write's commit, and one that claimed it
// before makes the write fail with run.ErrFenced.
type TxFencer interface {
	// TxFence returns the fence of attempt, or nil when the journal cannot
	// check it inside d's transactions (another database, or a driver
	// without TxStepFencer and TxRunSaver): the caller then uses Fence.
	TxFence(d *DB, runID string, attempt int) TxFunc
}

var _ TxFencer = (*Journal)(nil)

// TxFence implements TxFencer.
func (j *Journal) TxFence(d *DB, runID string, attempt int) TxFunc {
	tf, ok := j.jd.(TxStepFencer)
	if !ok || d == nil || d.driver != j.d.driver {
		return nil
	}
	if _, ok := d.driver.(TxRunSaver); !ok {
		return nil
	}
	return func(ctx context.Context, tx *sql.Tx) error {
		if err := checkStep(run.JournalStep{RunID: runID, Key: fenceProbe, Attempt: attempt}); err != nil {
			return err
		}
		return tf.FenceTx(ctx, tx, runID, attempt, j.d.now().Unix())
	}
}

// fenceProbe is the key of the step Fence writes: a finished no-op step.
const fenceProbe = "fence:attempt"

// Steps returns a run's recorded steps (for inspection).
func (j *Journal) Steps(ctx context.Context, runID string) ([]RunStep, error) {
	bctx, call := j.d.bound(ctx)
	out, err := j.jd.RunSteps(bctx, runID)
	return out, call.done(err)
}

// ClearTx returns the statements of ClearJournal for a transaction on d
// (the one that records the run's final row and its job's outcome), or nil
// when the journal cannot clear in d's transactions.
func (j *Journal) ClearTx(d *DB, runID string) TxFunc {
	tf, ok := j.jd.(TxStepFencer)
	if !ok || d == nil || d.driver != j.d.driver {
		return nil
	}
	return func(ctx context.Context, tx *sql.Tx) error { return tf.ClearRunStepsTx(ctx, tx, runID) }
}

// ClearJournal deletes a run's steps. The queue calls it when the run ends
// COMPLETED, ERROR or CANCELLED (a PAUSED run keeps its journal: it resumes
// from it).
func (j *Journal) ClearJournal(ctx context.Context, runID string) error {
	bctx, call := j.d.bound(ctx)
	return call.done(j.jd.ClearRunSteps(bctx, runID))
}
