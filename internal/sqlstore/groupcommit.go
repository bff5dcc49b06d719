package sqlstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/internal/groupcommit"
)

// maxGroup is the most run writes one group commit holds.
const maxGroup = 64

// groupCommit batches the run writes (SaveRun, SaveRunWith) of concurrent
// callers on a single-writer dialect (SQLite) into one transaction: one
// BEGIN IMMEDIATE, one COMMIT and one WAL append for the group instead of
// one per write, and pages that several writes change (the runs table's
// last leaf, its indexes, the durable queue's job rows) written to the WAL
// once. The durable queue's claims and final saves, and its enqueues, go
// through it.
//
// Each write runs in a savepoint of its own: a write that fails (a fence
// that refuses, a constraint, another user's row) is rolled back to its
// savepoint and fails alone; the others commit. The group commits or
// fails as one; no caller returns before the commit of its write, so a
// crash (kill -9) at any point leaves every write of the group either
// committed or not written, as separate transactions would. Writes do not
// wait for a group to fill: the first caller leads a group of one; whoever
// arrives while a group holds the writer joins the next one.
type groupCommit struct {
	g *groupcommit.Group[groupWrite]
}

// groupWrite is one caller's write in a group.
type groupWrite func(ctx context.Context, c txConn) error

// groupOp is one caller's write in a group.
type groupOp = groupcommit.Op[groupWrite]

// newGroupCommit is s's group commit, ordered among s's other writes by
// its gate.
func newGroupCommit(s *Store) groupCommit {
	return groupCommit{g: &groupcommit.Group[groupWrite]{
		Commit: s.commitGroup,
		Max:    maxGroup,
		// The gate orders the group among the store's other writes.
		Enter: func() { _ = s.gate.enter(context.Background()) },
		Leave: s.gate.leave,
	}}
}

// grouped runs fn in a write transaction shared with the run writes of
// other callers, in a savepoint of its own, and returns once the
// transaction committed (nil) or fn or the commit failed. fn may run again
// in a fresh transaction when a batch-mate broke the shared one (it must
// not keep state from a run that returned nil).
// A write marked groupcommit.Alone (a streamed run's) commits by itself.
func (s *Store) grouped(ctx context.Context, fn func(ctx context.Context, c txConn) error) error {
	if groupcommit.IsAlone(ctx) {
		return s.alone(ctx, fn)
	}
	return s.group.g.Do(ctx, fn)
}

// alone runs fn in a transaction of its own once the writes ahead of it in
// the gate are done. A group wakes all its members at once; under load their
// clients' next requests then arrive together and each waits for a core
// behind the others' whole runs, which is what a streamed run's first event
// must not do (docs/benchmarks.md, "i4-sse" and "i4-gc").
func (s *Store) alone(ctx context.Context, fn groupWrite) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	op := &groupOp{Ctx: ctx, Val: fn}
	s.commitGroup([]*groupOp{op})
	return op.Err
}

// commitGroup runs ops in one transaction, each in a savepoint, commits
// it and sets each op's outcome (the Group wakes its caller). When the transaction itself broke (a savepoint could not be
// rolled back to), the op that broke it gets its error and the others are
// returned to run again in a fresh transaction.
func (s *Store) commitGroup(ops []*groupOp) (again []*groupOp) {
	bg := context.Background()
	finish := func(ok []*groupOp, err error) {
		for _, op := range ok {
			if op.Err == nil {
				op.Err = err
			}
		}
	}
	tx, err := s.w.BeginTx(bg, s.d.TxOptions)
	if err != nil {
		finish(ops, err)
		return nil
	}
	defer tx.Rollback()
	c := txConn{s: s, tx: tx}
	var (
		before   uint64 // the change counter under the write lock
		beforeOK bool
	)
	if s.hc != nil {
		c.fx = &groupEffects{}
		before, beforeOK = s.hc.count()
	}
	if len(ops) == 1 {
		// Alone: no savepoint needed, its error rolls the transaction back.
		op := ops[0]
		if op.Err = runOp(op, c); op.Err == nil {
			c.fx.ran(0)
			op.Err = tx.Commit()
			s.hc.committed(before, beforeOK, c.fx, op.Err)
		}
		return nil
	}
	var done []*groupOp
	for i, op := range ops {
		if _, err := tx.ExecContext(bg, "SAVEPOINT run_write"); err != nil {
			return s.brokenGroup(done, ops[i:], err)
		}
		mark := c.fx.mark()
		op.Err = runOp(op, c)
		if op.Err != nil {
			c.fx.rollback(mark)
			if _, err := tx.ExecContext(bg, "ROLLBACK TO run_write"); err != nil {
				return s.brokenGroup(done, ops[i+1:], nil)
			}
		} else {
			c.fx.ran(mark)
		}
		if _, err := tx.ExecContext(bg, "RELEASE run_write"); err != nil {
			if op.Err == nil {
				done = append(done, op)
			}
			return s.brokenGroup(done, ops[i+1:], nil)
		}
		done = append(done, op)
	}
	err = tx.Commit()
	if err != nil {
		for _, op := range done {
			if op.Err == nil {
				op.Err = err
			}
		}
	}
	s.hc.committed(before, beforeOK, c.fx, err)
	return nil
}

// brokenGroup is the rest of a group whose transaction broke: the writes
// that ran in it (the Group clears their outcomes) and those that did not,
// to run again. With err (the transaction cannot start savepoints), the first of
// them fails with it instead, so that the retries end.
func (s *Store) brokenGroup(ran, rest []*groupOp, err error) []*groupOp {
	again := make([]*groupOp, 0, len(ran)+len(rest))
	again = append(again, ran...)
	again = append(again, rest...)
	if err != nil && len(again) > 0 {
		again[0].Err = fmt.Errorf("sqlstore: grouped write: %w", err)
		again = again[1:]
	}
	return again
}

// runOp runs op's write; a panic is its error, not the leader's.
func runOp(op *groupOp, c txConn) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v", errGroupPanic, v)
		}
	}()
	return op.Val(op.Ctx, c)
}

// errGroupPanic: a grouped write panicked.
var errGroupPanic = errors.New("sqlstore: a grouped write panicked")
