package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// TxFunc runs statements of another package (the durable queue) inside a
// driver's write transaction.
type TxFunc func(ctx context.Context, tx *sql.Tx) error

// TxRunSaver is an optional Driver ability: SaveRun with the caller's
// statements in the same transaction. The durable queue uses it to commit a
// background run's PENDING row with its job, and to fence a worker's run
// writes on the job's attempt.
type TxRunSaver interface {
	// SaveRunWith is SaveRun (s may be nil: the run alone) that calls with
	// inside the transaction before the writes; with's error rolls back.
	SaveRunWith(ctx context.Context, s *Session, r *Run, with TxFunc) (*Session, *Run, error)
}

// SQLWriter is an optional Driver ability: the pool the store writes through
// and its dialect ("sqlite", "postgres", "mysql"), for a package that keeps
// its own tables in the same database (the durable queue). On SQLite the
// pool is the single writer connection: using it keeps every write of the
// process in one line.
type SQLWriter interface {
	SQLWriter() WriterPool
}

// WriterPool is what SQLWriter lends.
type WriterPool struct {
	DB *sql.DB
	// Dialect is "sqlite", "postgres" or "mysql".
	Dialect string
	// Schema qualifies the store's tables (Postgres); empty: unqualified.
	Schema string
}

// ErrNoTx: the driver cannot write a run together with other statements.
var ErrNoTx = errors.New("db: the driver has no transactions for the durable queue (use sqlite or postgres)")

type fenceKey struct{}

// WithWriteFence returns ctx whose run writes (UpsertRun, SaveRun) run fence
// in the same transaction first: fence's error (for example run.ErrFenced
// when a newer attempt owns the run) aborts the write. Fences compose: the
// one added last runs first, then the one ctx carried (WithTxFenceAfter
// adds one that runs last). Drivers without TxRunSaver refuse fenced
// writes with ErrNoTx.
func WithWriteFence(ctx context.Context, fence TxFunc) context.Context {
	if fence == nil {
		return ctx
	}
	if outer := writeFence(ctx); outer != nil {
		first := fence
		fence = func(ctx context.Context, tx *sql.Tx) error {
			if err := first(ctx, tx); err != nil {
				return err
			}
			return outer(ctx, tx)
		}
	}
	ctx = context.WithValue(ctx, fenceKey{}, fence)
	if p, ok := ctx.Value(pipedKey{}).(*pipedFences); ok && p != nil {
		// A fence without a piped form: the write can no longer be piped.
		ctx = context.WithValue(ctx, pipedKey{}, (*pipedFences)(nil))
	}
	return ctx
}

// WithTxFenceAfter is WithTxFence whose fence (and its piped form) runs
// after the fences ctx carries already, not before them: a run's journal
// fence under another run's job fence (a team member's or a workflow
// step's run inside a durable background run, whose job fence does not
// vouch for the member's attempt: WithRunFenced). The write then locks the
// job row before the journal's fence row, the order of every other
// transaction of the durable queue that takes both (its claim, a run's
// final save, finish, a session delete: docs/adr/queue-claim-lock-order.md),
// and cannot wait for one of them in a cycle.
//
// The fences ctx carries must not delete runID's journal (the queue's job
// fence does, in the final save of its own run): the journal's fence would
// raise its row again after them. The queue's fence of its own run vouches
// for it, and then no journal fence is added.
func WithTxFenceAfter(ctx context.Context, tf TxFencer, d *DB, runID string, attempt int) (context.Context, bool) {
	fence, piped, need, ok := txFence(ctx, tf, d, runID, attempt)
	if !need {
		return ctx, ok
	}
	outer := writeFence(ctx)
	if outer == nil {
		return WithPipedWriteFence(ctx, fence, piped), true
	}
	ctx = context.WithValue(ctx, fenceKey{}, TxFunc(func(ctx context.Context, tx *sql.Tx) error {
		if err := outer(ctx, tx); err != nil {
			return err
		}
		return fence(ctx, tx)
	}))
	// Piped only when every fence has a piped form, in the same order.
	var fns *pipedFences
	if prev, _ := ctx.Value(pipedKey{}).(*pipedFences); prev != nil && piped != nil {
		fns = &pipedFences{append(append(make([]PipedFunc, 0, len(prev.fns)+1), prev.fns...), piped)}
	}
	return context.WithValue(ctx, pipedKey{}, fns), true
}

type savingKey struct{}

// SavingRun returns, inside a write fence or the with of SaveRunWith, the
// run row the transaction writes (as validated, before the driver's
// write); nil elsewhere.
func SavingRun(ctx context.Context) *Run {
	r, _ := ctx.Value(savingKey{}).(*Run)
	return r
}

func writeFence(ctx context.Context) TxFunc {
	f, _ := ctx.Value(fenceKey{}).(TxFunc)
	return f
}

// SaveRunWith stores a session (nil: none) and one of its runs with the
// checks of SaveRun, running with inside the same transaction first.
func (d *DB) SaveRunWith(ctx context.Context, s *Session, r *Run, with TxFunc) (*Session, *Run, error) {
	ts, ok := d.driver.(TxRunSaver)
	if !ok {
		return nil, nil, ErrNoTx
	}
	var sc *Session
	var err error
	if s != nil {
		if sc, err = d.sessionToWrite(ctx, s); err != nil {
			return nil, nil, err
		}
	}
	rc, err := d.runToWrite(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	if sc != nil && rc.SessionID != sc.SessionID {
		return nil, nil, fmt.Errorf("%w: run %s is in session %s, not %s", ErrInvalidRecord, rc.RunID, rc.SessionID, sc.SessionID)
	}
	inner := with
	if fence := writeFence(ctx); fence != nil {
		with = func(ctx context.Context, tx *sql.Tx) error {
			if err := fence(ctx, tx); err != nil {
				return err
			}
			if inner == nil {
				return nil
			}
			return inner(ctx, tx)
		}
	}
	sctx := context.WithValue(ctx, savingKey{}, rc)
	bctx, call := d.bound(sctx)
	if ps, ok := d.driver.(PipedRunSaver); ok && inner == nil && ps.PipesRunWrites() {
		// The fences' statements and the write in one round trip; when
		// anything fails there, the fences' TxFuncs decide below.
		if pre, ok := pipedFence(sctx); ok {
			if so, ro, err := ps.SaveRunPiped(bctx, sc, rc, pre); err == nil {
				return so, ro, call.done(nil)
			}
		}
	}
	so, ro, err := ts.SaveRunWith(bctx, sc, rc, with)
	return so, ro, call.done(err)
}

// WriteFence returns the fence WithWriteFence put in ctx (nil: none), for
// a package that writes rows of the run in its own transactions (the run
// event log).
func WriteFence(ctx context.Context) TxFunc { return writeFence(ctx) }

// TxRunReader is an optional Driver ability: a run row read inside the
// caller's write transaction, locked until it ends where the dialect can
// (SQLite's writer transaction excludes every other write), for a write
// built from the row in the same transaction (the durable queue's
// requeue) that must not overwrite a change committed in between.
type TxRunReader interface {
	// GetRunTx is GetRun (same errors) in tx.
	GetRunTx(ctx context.Context, tx *sql.Tx, runID string) (*Run, error)
}

// GetRunTx reads a run in tx, the transaction of a TxFunc (see
// TxRunReader); ErrNoTx when the driver cannot.
func (d *DB) GetRunTx(ctx context.Context, tx *sql.Tx, runID string) (*Run, error) {
	tr, ok := d.driver.(TxRunReader)
	if !ok {
		return nil, ErrNoTx
	}
	return tr.GetRunTx(ctx, tx, runID)
}
