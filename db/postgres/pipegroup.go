package postgres

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

// maxPipeGroup is the most pipelined writes one shared transaction holds.
const maxPipeGroup = 32

// pipeGroups shares one transaction among the pipelined writes (a run's
// save, a durable queue's claim and final save) of concurrent callers on a
// pool: BEGIN, every caller's statements, in one pgx batch, and one COMMIT,
// so K runs finishing together cost two round trips and one WAL flush
// instead of 2K and K. No caller waits for a group to fill: the first one
// pipelines alone; whoever arrives while a pipeline runs joins the next
// group, which the first of them leads once the running one is done.
//
// A group is all or nothing: when any statement of any member fails (a
// fence that refuses, a row that is not the common case's, a constraint),
// the whole transaction is rolled back and every member pipelines again
// alone, so each gets the outcome it would have had by itself (and a
// refusing fence still falls back to its Go form above). No caller returns
// before the commit that holds its write.
type pipeGroups struct {
	mu     sync.Mutex
	byPool map[*sql.DB]*pipeGroup
}

// pipeGroup is the pending writes of one pool.
type pipeGroup struct {
	mu      sync.Mutex
	pending []*pipeOp
	leading bool // a caller leads a group (or is about to)
}

// pipeOp is one caller's pipelined write.
type pipeOp struct {
	ctx   context.Context
	stmts []sqlstore.PipelineStmt
	err   error
	// taken: a group holds the op, or its caller is handed the lead.
	taken bool
	// done receives false when the op's outcome is in err, true when its
	// caller is to lead the next group (the op is still pending).
	done chan bool
}

// errAlone tells a member of a group that failed to pipeline its write
// again by itself.
var errAlone = errors.New("postgres: pipeline again alone")

func newPipeGroups() *pipeGroups { return &pipeGroups{byPool: map[*sql.DB]*pipeGroup{}} }

func (gs *pipeGroups) of(pool *sql.DB) *pipeGroup {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g := gs.byPool[pool]
	if g == nil {
		g = &pipeGroup{}
		gs.byPool[pool] = g
	}
	return g
}

// pipeline is the Dialect's Pipeline: stmts in one transaction (see
// pipeline), shared with the concurrent callers' (see pipeGroups).
func (gs *pipeGroups) pipeline(ctx context.Context, pool *sql.DB, stmts []sqlstore.PipelineStmt) error {
	g := gs.of(pool)
	op := &pipeOp{ctx: ctx, stmts: stmts, done: make(chan bool, 1)}
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
	}
	if lead {
		g.lead(pool)
	}
	if errors.Is(op.err, errAlone) {
		return pipeline(ctx, pool, stmts)
	}
	return op.err
}

// withdraw removes op from the pending writes unless a group holds it.
func (g *pipeGroup) withdraw(op *pipeOp) bool {
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

// lead pipelines the pending writes (the leader's first) as one group,
// then hands the lead to the first caller still pending.
func (g *pipeGroup) lead(pool *sql.DB) {
	g.mu.Lock()
	n := min(len(g.pending), maxPipeGroup)
	batch := make([]*pipeOp, 0, n)
	for _, op := range g.pending[:n] {
		op.taken = true
		batch = append(batch, op)
	}
	g.pending = append(g.pending[:0], g.pending[n:]...)
	g.mu.Unlock()

	runGroup(pool, batch)

	g.mu.Lock()
	var next *pipeOp
	if len(g.pending) == 0 {
		g.leading = false
	} else {
		next = g.pending[0]
		next.taken = true
	}
	g.mu.Unlock()
	for _, op := range batch {
		op.done <- false // buffered: the leader's own is never read
	}
	if next != nil {
		next.done <- true
	}
}

// runGroup pipelines ops in one transaction and records each op's outcome.
// A member whose context ended before the group ran is left out with its
// context's error; a group that fails sends every member back to
// pipeline alone.
func runGroup(pool *sql.DB, ops []*pipeOp) {
	live := ops[:0:0]
	for _, op := range ops {
		if err := op.ctx.Err(); err != nil {
			op.err = err
			continue
		}
		live = append(live, op)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		live[0].err = pipeline(live[0].ctx, pool, live[0].stmts)
		return
	}
	n := 0
	for _, op := range live {
		n += len(op.stmts)
	}
	stmts := make([]sqlstore.PipelineStmt, 0, n)
	for _, op := range live {
		stmts = append(stmts, op.stmts...)
	}
	ctx, cancel := groupContext(live)
	defer cancel()
	err := pipeline(ctx, pool, stmts)
	for _, op := range live {
		if err != nil {
			op.err = errAlone
		} else {
			op.err = nil
		}
	}
}

// groupContext is the context a group's transaction runs under: no
// member's cancellation ends it (the others' writes are in it), and it
// ends at the latest of the members' deadlines (none when one has none).
func groupContext(ops []*pipeOp) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, op := range ops {
		d, ok := op.ctx.Deadline()
		if !ok {
			return context.WithCancel(context.WithoutCancel(ops[0].ctx))
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(ops[0].ctx), latest)
}
