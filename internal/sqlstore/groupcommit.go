package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
	mu      sync.Mutex
	pending []*groupOp
	leading bool // a caller leads a group (or is about to)
}

// groupOp is one caller's write.
type groupOp struct {
	ctx context.Context
	fn  func(ctx context.Context, c txConn) error
	err error
	// taken: a group holds the op, or its caller is handed the lead (it
	// can no longer withdraw).
	taken bool
	// done receives false when the op's outcome is in err, true when its
	// caller is to lead the next group (the op is still pending).
	done chan bool
}

// grouped runs fn in a write transaction shared with the run writes of
// other callers, in a savepoint of its own, and returns once the
// transaction committed (nil) or fn or the commit failed. fn may run again
// in a fresh transaction when a batch-mate broke the shared one (it must
// not keep state from a run that returned nil).
func (s *Store) grouped(ctx context.Context, fn func(ctx context.Context, c txConn) error) error {
	op := &groupOp{ctx: ctx, fn: fn, done: make(chan bool, 1)}
	g := &s.group
	g.mu.Lock()
	g.pending = append(g.pending, op)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	for !lead {
		select {
		case lead = <-op.done:
			if !lead {
				return op.err
			}
		case <-ctx.Done():
			if g.withdraw(op) {
				return ctx.Err()
			}
			// A group holds it, or its caller is to lead: that follows.
			if lead = <-op.done; !lead {
				return op.err
			}
		}
	}
	s.leadGroups()
	return op.err
}

// withdraw removes op from the pending writes unless a group holds it.
func (g *groupCommit) withdraw(op *groupOp) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if op.taken {
		return false
	}
	for i, p := range g.pending {
		if p == op {
			g.pending = append(g.pending[:i], g.pending[i+1:]...)
			return true
		}
	}
	return false
}

// leadGroups commits the pending writes (the leader's first) as one group,
// then hands the lead to the first caller still pending.
func (s *Store) leadGroups() {
	g := &s.group
	// The gate orders the group among the store's other writes.
	_ = s.gate.enter(context.Background())
	g.mu.Lock()
	n := min(len(g.pending), maxGroup)
	batch := make([]*groupOp, n)
	copy(batch, g.pending)
	g.pending = append(g.pending[:0], g.pending[n:]...)
	for _, op := range batch {
		op.taken = true
	}
	g.mu.Unlock()
	for len(batch) > 0 {
		batch = s.commitGroup(batch)
	}
	s.gate.leave()
	g.mu.Lock()
	var next *groupOp
	if len(g.pending) == 0 {
		g.leading = false
	} else {
		next = g.pending[0]
		next.taken = true
	}
	g.mu.Unlock()
	if next != nil {
		next.done <- true
	}
}

// commitGroup runs ops in one transaction, each in a savepoint, commits
// it and tells each op's caller its outcome (except the leader's, which
// reads it). When the transaction itself broke (a savepoint could not be
// rolled back to), the op that broke it gets its error and the others are
// returned to run again in a fresh transaction.
func (s *Store) commitGroup(ops []*groupOp) (again []*groupOp) {
	bg := context.Background()
	finish := func(ok []*groupOp, err error) {
		for _, op := range ok {
			if op.err == nil {
				op.err = err
			}
		}
	}
	tx, err := s.w.BeginTx(bg, s.d.TxOptions)
	if err != nil {
		finish(ops, err)
		s.notify(ops)
		return nil
	}
	defer tx.Rollback()
	c := txConn{s, tx}
	if len(ops) == 1 {
		// Alone: no savepoint needed, its error rolls the transaction back.
		op := ops[0]
		if op.err = runOp(op, c); op.err == nil {
			op.err = tx.Commit()
		}
		s.notify(ops)
		return nil
	}
	var done []*groupOp
	for i, op := range ops {
		if _, err := tx.ExecContext(bg, "SAVEPOINT run_write"); err != nil {
			return s.brokenGroup(done, ops[i:], err)
		}
		op.err = runOp(op, c)
		if op.err != nil {
			if _, err := tx.ExecContext(bg, "ROLLBACK TO run_write"); err != nil {
				s.notify([]*groupOp{op})
				return s.brokenGroup(done, ops[i+1:], nil)
			}
		}
		if _, err := tx.ExecContext(bg, "RELEASE run_write"); err != nil {
			if op.err == nil {
				done = append(done, op)
			} else {
				s.notify([]*groupOp{op})
			}
			return s.brokenGroup(done, ops[i+1:], nil)
		}
		done = append(done, op)
	}
	if err := tx.Commit(); err != nil {
		for _, op := range done {
			if op.err == nil {
				op.err = err
			}
		}
	}
	s.notify(done)
	return nil
}

// brokenGroup is the rest of a group whose transaction broke: the writes
// that ran in it (their errors forgotten) and those that did not, to run
// again. With err (the transaction cannot start savepoints), the first of
// them fails with it instead, so that the retries end.
func (s *Store) brokenGroup(ran, rest []*groupOp, err error) []*groupOp {
	again := make([]*groupOp, 0, len(ran)+len(rest))
	for _, op := range ran {
		op.err = nil
		again = append(again, op)
	}
	again = append(again, rest...)
	if err != nil && len(again) > 0 {
		again[0].err = fmt.Errorf("sqlstore: grouped write: %w", err)
		s.notify(again[:1])
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
	return op.fn(op.ctx, c)
}

// errGroupPanic: a grouped write panicked.
var errGroupPanic = errors.New("sqlstore: a grouped write panicked")

// notify hands ops their outcome. The leader's own op is told too: its
// channel is buffered, and it reads err directly.
func (s *Store) notify(ops []*groupOp) {
	for _, op := range ops {
		select {
		case op.done <- false:
		default:
		}
	}
}
