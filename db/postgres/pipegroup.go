package postgres

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/groupcommit"
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

// pipeGroup is the group commit of one pool's pipelined writes.
type pipeGroup = groupcommit.Group[[]sqlstore.PipelineStmt]

// pipeOp is one caller's pipelined write.
type pipeOp = groupcommit.Op[[]sqlstore.PipelineStmt]

// errAlone tells a member of a group that failed to pipeline its write
// again by itself.
var errAlone = errors.New("postgres: pipeline again alone")

func newPipeGroups() *pipeGroups { return &pipeGroups{byPool: map[*sql.DB]*pipeGroup{}} }

func (gs *pipeGroups) of(pool *sql.DB) *pipeGroup {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	g := gs.byPool[pool]
	if g == nil {
		g = &pipeGroup{Max: maxPipeGroup, Commit: func(batch []*pipeOp) []*pipeOp {
			runGroup(pool, batch)
			return nil
		}}
		gs.byPool[pool] = g
	}
	return g
}

// pipeline is the Dialect's Pipeline: stmts in one transaction (see
// pipeline), shared with the concurrent callers' (see pipeGroups) unless
// ctx's writes are to commit alone (groupcommit.Alone: a streamed run's,
// and the durable queue's enqueue groups, already a group of many), which
// then go out at once, beside the group in flight, instead of waiting for
// it and holding the next.
func (gs *pipeGroups) pipeline(ctx context.Context, pool *sql.DB, stmts []sqlstore.PipelineStmt) error {
	if groupcommit.IsAlone(ctx) {
		return pipeline(ctx, pool, stmts)
	}
	err := gs.of(pool).Do(ctx, stmts)
	if errors.Is(err, errAlone) {
		return pipeline(ctx, pool, stmts)
	}
	return err
}

// runGroup pipelines ops in one transaction and records each op's outcome.
// A member whose context ended before the group ran is left out with its
// context's error; a group that fails sends every member back to
// pipeline alone.
func runGroup(pool *sql.DB, ops []*pipeOp) {
	live := ops[:0:0]
	for _, op := range ops {
		if err := op.Ctx.Err(); err != nil {
			op.Err = err
			continue
		}
		live = append(live, op)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		live[0].Err = pipeline(live[0].Ctx, pool, live[0].Val)
		return
	}
	inLockOrder(live)
	stmts := inSessionOrder(live)
	ctx, cancel := groupContext(live)
	defer cancel()
	err := pipeline(ctx, pool, stmts)
	for _, op := range live {
		if err != nil {
			op.Err = errAlone
		} else {
			op.Err = nil
		}
	}
}

// inLockOrder sorts a group's members by their lock keys (db.WithLockKey;
// byte order, members without one last, in arrival order): the queue's
// claims and saves lock their job rows in id order, as its lease renewal
// does, so the group and a renewal cannot wait on each other in a cycle.
func inLockOrder(ops []*pipeOp) {
	slices.SortStableFunc(ops, func(a, b *pipeOp) int {
		ka, oka := db.LockKey(a.Ctx)
		kb, okb := db.LockKey(b.Ctx)
		switch {
		case oka && okb:
			return strings.Compare(ka, kb)
		case oka:
			return -1
		case okb:
			return 1
		}
		return 0
	})
}

// inSessionOrder is the group's statements: every member's statements
// before its session part (its fences, its job row, a claim's run row), in
// the members' order, then the members' session parts (a session's lock,
// its upsert, the run's upsert: from the statement marked with
// PipelineStmt.Session to the member's end) in session order, members of
// one session in their order. Each member's statements keep their order.
// So every transaction that writes session rows (a group, an enqueue
// group, another replica's group) locks them in session-id order, after
// the job rows it locks in id order, and two of them cannot wait on each
// other in a cycle over sessions. A member with several writes (none is
// grouped today) keeps everything from its first session part on together.
func inSessionOrder(ops []*pipeOp) []sqlstore.PipelineStmt {
	type tail struct {
		session string
		stmts   []sqlstore.PipelineStmt
	}
	n := 0
	for _, op := range ops {
		n += len(op.Val)
	}
	stmts := make([]sqlstore.PipelineStmt, 0, n)
	tails := make([]tail, 0, len(ops))
	for _, op := range ops {
		i := slices.IndexFunc(op.Val, func(st sqlstore.PipelineStmt) bool { return st.Session != "" })
		if i < 0 {
			stmts = append(stmts, op.Val...)
			continue
		}
		stmts = append(stmts, op.Val[:i]...)
		tails = append(tails, tail{op.Val[i].Session, op.Val[i:]})
	}
	slices.SortStableFunc(tails, func(a, b tail) int { return strings.Compare(a.session, b.session) })
	for _, t := range tails {
		stmts = append(stmts, t.stmts...)
	}
	return stmts
}

// groupContext is the context a group's transaction runs under: no
// member's cancellation ends it (the others' writes are in it), and it
// ends at the latest of the members' deadlines (none when one has none).
func groupContext(ops []*pipeOp) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, op := range ops {
		d, ok := op.Ctx.Deadline()
		if !ok {
			return context.WithCancel(context.WithoutCancel(ops[0].Ctx))
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(ops[0].Ctx), latest)
}
