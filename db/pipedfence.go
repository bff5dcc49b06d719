package db

import (
	"context"
	"errors"
	"sync"

	"github.com/agentryhq/agentry/run"
)

// PipedStmt is one statement of a piped write fence (WithPipedWriteFence).
type PipedStmt struct {
	// Query has ? placeholders.
	Query string
	Args  []any
	// Row reads the statement's one row (its Scan returns sql.ErrNoRows
	// when there is none); nil executes the statement and reads nothing.
	// An error it returns rolls the write back.
	Row func(sc interface{ Scan(dest ...any) error }) error
}

// PipedFunc is the piped form of a write fence: statements that check what
// the fence's TxFunc checks and write what it writes when all is well
// (ok false: not expressible now; the TxFunc is used). A driver that
// pipelines (PipedRunSaver) sends them with the run's write in one round
// trip. Any failure (a statement's error, a Row's error: a fence that
// refuses, a row that is not what the common case expects) rolls the piped
// write back, and the write is made again through the TxFunc, in a
// transaction of its own, which decides and says why. So a piped form
// need only express the common case; it must never commit what the TxFunc
// would refuse.
type PipedFunc func(ctx context.Context) (stmts []PipedStmt, ok bool)

// ErrNotPiped: the driver cannot send a run's write with other statements
// in one round trip.
var ErrNotPiped = errors.New("db: the driver does not pipeline run writes")

// PipedRunSaver is an optional Driver ability (Postgres): SaveRun with pre's
// statements first in the same transaction, sent with BEGIN and the run's
// write in one round trip, then COMMIT (or ROLLBACK when a statement or a
// Row failed) in a second. ErrNotPiped when the dialect cannot.
type PipedRunSaver interface {
	SaveRunPiped(ctx context.Context, s *Session, r *Run, pre []PipedStmt) (*Session, *Run, error)
	// PipesRunWrites says whether SaveRunPiped can (false: ErrNotPiped
	// always, and the fences' statements are not built).
	PipesRunWrites() bool
}

// pipedKey holds the piped forms of the fences in ctx, in the order they
// run, or nil once a fence without one was added.
type pipedKey struct{}

type pipedFences struct{ fns []PipedFunc }

// WithPipedWriteFence is WithWriteFence with the fence's piped form (nil:
// none, as WithWriteFence).
func WithPipedWriteFence(ctx context.Context, fence TxFunc, piped PipedFunc) context.Context {
	if fence == nil {
		return ctx
	}
	var fns []PipedFunc
	if piped != nil {
		// Every fence in ctx must have one: the piped write replaces them all.
		if prev, ok := ctx.Value(pipedKey{}).(*pipedFences); ok && prev != nil {
			fns = append([]PipedFunc{piped}, prev.fns...)
		} else if writeFence(ctx) == nil {
			fns = []PipedFunc{piped}
		}
	}
	ctx = WithWriteFence(ctx, fence)
	if fns == nil {
		return context.WithValue(ctx, pipedKey{}, (*pipedFences)(nil))
	}
	return context.WithValue(ctx, pipedKey{}, &pipedFences{fns})
}

// pipedFence is the statements of ctx's fences in the order they run, when
// every one has a piped form that applies now.
func pipedFence(ctx context.Context) ([]PipedStmt, bool) {
	p, _ := ctx.Value(pipedKey{}).(*pipedFences)
	if p == nil {
		return nil, false
	}
	var out []PipedStmt
	for _, fn := range p.fns {
		stmts, ok := fn(ctx)
		if !ok {
			return nil, false
		}
		out = append(out, stmts...)
	}
	return out, true
}

// PipedStepFencer is an optional StepJournalDriver ability: the statements
// of TxStepFencer for a piped write.
type PipedStepFencer interface {
	// FenceStmt raises runID's fence to attempt and locks it; its Row
	// fails with run.ErrFenced when a newer attempt holds it. ok false:
	// the dialect cannot say it in one statement.
	FenceStmt(runID string, attempt int, now int64) (PipedStmt, bool)
	// ClearStmt deletes runID's steps.
	ClearStmt(runID string) PipedStmt
	// CountStepsStmt counts runID's steps (its fence aside) and passes
	// the count to count.
	CountStepsStmt(runID string, count func(n int)) PipedStmt
}

// PipedFence is TxFence's piped form (nil when the journal's driver has
// none).
func (j *Journal) PipedFence(d *DB, runID string, attempt int) PipedFunc {
	pf, ok := j.jd.(PipedStepFencer)
	if !ok || j.TxFence(d, runID, attempt) == nil {
		return nil
	}
	return func(context.Context) ([]PipedStmt, bool) {
		if checkStep(run.JournalStep{RunID: runID, Key: fenceProbe, Attempt: attempt}) != nil {
			return nil, false // the TxFunc says why
		}
		st, ok := pf.FenceStmt(runID, attempt, j.d.now().Unix())
		return []PipedStmt{st}, ok
	}
}

// ClearStmt is ClearTx's statement for a piped write (ok false: none).
func (j *Journal) ClearStmt(d *DB, runID string) (PipedStmt, bool) {
	pf, ok := j.jd.(PipedStepFencer)
	if !ok || j.ClearTx(d, runID) == nil {
		return PipedStmt{}, false
	}
	return pf.ClearStmt(runID), true
}

// EmptyStmt is a statement for the piped claim of runID (after its
// fence's): it finds whether the run's journal holds no step, and calls
// empty when so (ok false: the journal's driver has none). The claim then
// hands the run WithFreshJournal, sparing it the reads of its start.
func (j *Journal) EmptyStmt(d *DB, runID string, empty func()) (PipedStmt, bool) {
	pf, ok := j.jd.(PipedStepFencer)
	if !ok || j.TxFence(d, runID, attempt1) == nil {
		return PipedStmt{}, false
	}
	return pf.CountStepsStmt(runID, func(n int) {
		if n == 0 {
			empty()
		}
	}), true
}

// attempt1 is any valid attempt (TxFence's availability does not depend on it).
const attempt1 = 1

// freshJournal is what a claim committed about a run's journal: no step
// recorded, and the fence at attempt, or held by no attempt (a first
// attempt's claim does not raise it: nothing older is left to fence out).
// seen holds the step keys read since.
type freshJournal struct {
	runID   string
	attempt int
	mu      sync.Mutex
	seen    map[string]bool
}

type freshKey struct{}

// WithFreshJournal returns ctx for a run whose claim, in the transaction
// that raised its journal's fence to attempt (or, a first attempt's, left
// it unraised), found no step recorded: the journal then answers the run's
// first reads (Fence, the lookup of each step key before it runs) without
// asking the database. A step of a newer attempt recorded since is not
// seen, as if it had been recorded just after a read: the step runs, and
// its write is fenced. A key read a second time is read from the database.
func WithFreshJournal(ctx context.Context, runID string, attempt int) context.Context {
	return context.WithValue(ctx, freshKey{}, &freshJournal{runID: runID, attempt: attempt})
}

// fresh reports whether ctx says runID's journal was empty with its fence at
// attempt when the run was claimed; with key, it also notes the key's first
// read (false from its second on).
func fresh(ctx context.Context, runID string, attempt int, key string) bool {
	f, _ := ctx.Value(freshKey{}).(*freshJournal)
	if f == nil || f.runID != runID || f.attempt != attempt {
		return false
	}
	if key == "" {
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen[key] {
		return false
	}
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	f.seen[key] = true
	return true
}

// WithTxFence returns ctx whose run writes on d are fenced on attempt of
// runID by tf inside their transaction (WithWriteFence with tf.TxFence,
// piped when tf is a Journal that can), and ok false when tf cannot fence
// inside d's transactions (ctx is returned as is).
//
// A run whose writes ctx already fences on the same attempt by a stricter
// check (WithRunFenced: the durable queue's lease on its job row) gets no
// journal fence on top: ctx is returned as is, with ok true.
func WithTxFence(ctx context.Context, tf TxFencer, d *DB, runID string, attempt int) (context.Context, bool) {
	fence, piped, need, ok := txFence(ctx, tf, d, runID, attempt)
	if !need {
		return ctx, ok
	}
	return WithPipedWriteFence(ctx, fence, piped), true
}

// txFence is tf's fence of runID's attempt on d and its piped form (nil
// unless tf is a Journal that has one); need false when ctx needs none
// (ok: it is fenced already, WithRunFenced) or tf cannot fence inside d's
// transactions (ok false).
func txFence(ctx context.Context, tf TxFencer, d *DB, runID string, attempt int) (fence TxFunc, piped PipedFunc, need, ok bool) {
	if runFenced(ctx, runID, attempt) {
		return nil, nil, false, true
	}
	if fence = tf.TxFence(d, runID, attempt); fence == nil {
		return nil, nil, false, false
	}
	if j, isJournal := tf.(*Journal); isJournal {
		piped = j.PipedFence(d, runID, attempt)
	}
	return fence, piped, true, true
}

// runFencedKey holds the run and attempt WithRunFenced vouches for.
type runFencedKey struct{}

type fencedRun struct {
	runID   string
	attempt int
}

// WithRunFenced returns ctx, which must already carry a write fence
// (WithWriteFence) that admits a write of runID's row only while attempt
// holds the run, checked in the write's transaction and at least as
// strictly as a step journal's fence: the durable queue's fence, which reads
// the job row's attempt and lease FOR UPDATE, and whose claim raised the
// journal's fence to attempt in the same transaction as the job's. A
// journal then adds no fence of its own to that run's writes (WithTxFence):
// it would check the same attempt again and write its fence row once more
// just before the final save deletes it.
func WithRunFenced(ctx context.Context, runID string, attempt int) context.Context {
	return context.WithValue(ctx, runFencedKey{}, fencedRun{runID: runID, attempt: attempt})
}

// runFenced reports whether ctx vouches (WithRunFenced) that runID's writes
// are fenced on attempt.
func runFenced(ctx context.Context, runID string, attempt int) bool {
	f, ok := ctx.Value(runFencedKey{}).(fencedRun)
	return ok && f.runID == runID && f.attempt == attempt && writeFence(ctx) != nil
}

// lockKeyKey holds a piped write's lock key (WithLockKey).
type lockKeyKey struct{}

// WithLockKey returns ctx whose piped writes lock rows keyed by key (the
// durable queue: the run's job row, keyed by its id) before any other
// caller's in a shared transaction. A driver that shares one transaction
// among concurrent callers' writes (Postgres's pipeline groups) sends them
// in the order of their keys (byte order; writes without one after them),
// so that the group locks job rows in the order the queue's lease renewal,
// which locks several at once, does: two transactions locking rows of one
// kind in one order cannot deadlock on them.
func WithLockKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, lockKeyKey{}, key)
}

// LockKey is ctx's lock key (WithLockKey), ok false when it has none.
func LockKey(ctx context.Context) (key string, ok bool) {
	key, ok = ctx.Value(lockKeyKey{}).(string)
	return key, ok
}

// PipedRunMover is an optional Driver ability (Postgres): a statement that
// moves a run's row to RUNNING on the server, for a piped write that holds
// no copy of the row (the durable queue's claim, which would otherwise read
// the row first to write it back).
type PipedRunMover interface {
	// RunningStmt moves runID's row to RUNNING (its status column and
	// run_data's status) when it is PENDING or RUNNING, and passes status
	// the row's status after the statement ("" when there is no row) and
	// its run_index (nil: none).
	// ok false: the dialect cannot say it in one statement.
	RunningStmt(runID string, status func(st run.Status, runIndex *int64)) (st PipedStmt, ok bool)
}

// RunningStmt is the driver's PipedRunMover statement, unscoped (the
// durable queue's claim acts for no user); ok false when it has none.
func (d *DB) RunningStmt(runID string, status func(st run.Status, runIndex *int64)) (PipedStmt, bool) {
	m, ok := d.driver.(PipedRunMover)
	if !ok {
		return PipedStmt{}, false
	}
	return m.RunningStmt(runID, status)
}
