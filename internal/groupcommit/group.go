package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// DefaultMax is the most operations a group holds when Group.Max is zero.
const DefaultMax = 64

// Op is one caller's operation in a group commit.
type Op[T any] struct {
	// Ctx is the caller's context (the commit function decides whether a
	// group still runs a member whose context ended after it was taken).
	Ctx context.Context
	// Val is what the caller asks to commit.
	Val T
	// Err is the operation's outcome, set by the commit function: Do
	// returns it.
	Err error
	// taken: a group holds the op, or its caller is handed the lead (it
	// can no longer withdraw).
	taken bool
	// again: the commit function returned the op to run again.
	again bool
	// done receives false when the op's outcome is in Err, true when its
	// caller is to lead the next group (the op is still pending).
	done chan bool
}

// Group coordinates the group commits of one resource (a writer
// connection, a pool). Nobody waits for a group to fill: the first caller
// leads a group of one, and whoever arrives while a group commits joins the
// next one, which the first of them leads. No caller returns before the
// commit function has decided its operation.
//
// The zero value is not usable: Commit is required. A Group must not be
// copied after first use.
type Group[T any] struct {
	// Commit commits batch (at least one op, the leader's first when the
	// leader is in it) and sets each op's Err. The ops it returns run
	// again as a fresh group, at once and by the same leader: their Err is
	// cleared and Reset called on each before. Every other op of batch is
	// decided and its caller woken. Commit must return a strict subset of
	// batch, in any order, or the retries may not end.
	Commit func(batch []*Op[T]) (again []*Op[T])
	// Reset, when set, clears what an op captured from a failed attempt
	// before it runs again (Err is cleared by the Group).
	Reset func(op *Op[T])
	// Enter, when set, is called by a leader before it takes its batch
	// (ops that arrive while it waits join that batch), and Leave after
	// the batch's last commit: the SQLite writer's gate.
	Enter func()
	Leave func()
	// Max is the most ops one group holds; zero means DefaultMax.
	Max int

	mu      sync.Mutex
	pending []*Op[T]
	leading bool // a caller leads a group (or is about to)
}

// Do commits v with the concurrent callers' operations and returns its
// outcome (the Err the commit function gave it), or ctx's error when ctx
// ends before a group takes it.
func (g *Group[T]) Do(ctx context.Context, v T) error {
	op := &Op[T]{Ctx: ctx, Val: v, done: make(chan bool, 1)}
	g.mu.Lock()
	g.pending = append(g.pending, op)
	lead := !g.leading
	g.leading = true
	g.mu.Unlock()
	if !lead {
		select {
		case lead = <-op.done:
		case <-ctx.Done():
			if g.withdraw(op) {
				return ctx.Err()
			}
			// A group holds it, or its caller is to lead: that follows.
			lead = <-op.done
		}
		if !lead {
			return op.Err
		}
	}
	g.lead()
	return op.Err
}

// Busy reports whether a group is pending or being committed.
func (g *Group[T]) Busy() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leading || len(g.pending) > 0
}

// State reports whether a caller leads a group and how many operations
// wait for the next one (for tests that wait for a group to form; callers
// decide with Busy).
func (g *Group[T]) State() (leading bool, pending int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.leading, len(g.pending)
}

// withdraw removes op from the pending operations unless a group holds it.
func (g *Group[T]) withdraw(op *Op[T]) bool {
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

// lead commits the pending operations (the leader's first) as one group,
// running again what the commit function returns, then hands the lead to
// the first caller still pending. The leader's own op is in the batch; it
// reads its outcome itself (its channel is buffered, so waking it is
// harmless).
func (g *Group[T]) lead() {
	if g.Enter != nil {
		g.Enter()
	}
	g.mu.Lock()
	n := g.take()
	batch := make([]*Op[T], n)
	copy(batch, g.pending)
	g.pending = append(g.pending[:0], g.pending[n:]...)
	for _, op := range batch {
		op.taken = true
	}
	g.mu.Unlock()
	for len(batch) > 0 {
		batch = g.commit(batch)
	}
	if g.Leave != nil {
		g.Leave()
	}
	g.mu.Lock()
	var next *Op[T]
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

// take is the size of the next group (g.mu held).
func (g *Group[T]) take() int {
	limit := g.Max
	if limit <= 0 {
		limit = DefaultMax
	}
	return min(len(g.pending), limit)
}

// commit runs one attempt of batch, wakes the members it decided and
// returns those to run again, reset.
func (g *Group[T]) commit(batch []*Op[T]) (again []*Op[T]) {
	again = g.attempt(batch)
	if len(again) >= len(batch) {
		// Not a strict subset: the first op fails, so that retries end.
		batch[0].Err = ErrNoProgress
		// (Commit may have returned batch itself: filter into a copy.)
		again = slices.DeleteFunc(slices.Clone(again), func(op *Op[T]) bool { return op == batch[0] })
	}
	for _, op := range again {
		op.again = true
	}
	for _, op := range batch {
		if op.again {
			op.again = false
			op.Err = nil
			if g.Reset != nil {
				g.Reset(op)
			}
			continue
		}
		op.done <- false // buffered: the leader's own is never read
	}
	return again
}

// attempt calls Commit; a panic in it decides the whole batch with
// ErrCommitPanicked instead of leaving the group without a leader.
func (g *Group[T]) attempt(batch []*Op[T]) (again []*Op[T]) {
	defer func() {
		if v := recover(); v != nil {
			err := fmt.Errorf("%w: %v", ErrCommitPanicked, v)
			for _, op := range batch {
				op.Err = err
			}
			again = nil
		}
	}()
	return g.Commit(batch)
}

// ErrCommitPanicked is every member's outcome when the commit function
// panicked while it held their group.
var ErrCommitPanicked = errors.New("groupcommit: the commit function panicked")

// ErrNoProgress is the outcome of the first member of a group whose commit
// function returned every member to run again (so that the retries end).
var ErrNoProgress = errors.New("groupcommit: the commit function ran no member")
