package queue

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/groupcommit"
)

// maxEnqueueGroup is the most enqueues one group commit holds.
const maxEnqueueGroup = 64

// errAlone sends an enqueue from the group commit to enqueueTx, which
// decides it alone (a repeated key, a full queue, a refused write, a group
// that could not commit).
var errAlone = errors.New("queue: enqueue alone")

// enqueueGroup is the group commit of concurrent enqueues on Postgres:
// the enqueues of concurrent callers go out as one transaction in one pgx
// batch (db.SaveRunsPiped), so a group of n costs two round trips instead
// of 8n: BEGIN, one depth count for the group, then for each enqueue its
// idempotency key (INSERT … ON CONFLICT DO NOTHING RETURNING), River's job
// and the agno_jobs row (one statement), the session lock, session and run
// upserts; COMMIT in the second round trip.
//
// The batch only says the common case. When a statement of one enqueue
// fails (its key is used already, its session or run belongs to another
// user, its run id is taken), the group is rolled back and committed again
// without it, and that enqueue is made alone by enqueueTx once the group is
// done. When the group as a whole fails (the queue would pass
// MaxQueueDepth with the group's runs, a lost connection), every member is
// made alone. Two enqueues with the same user and key never share a group:
// the later one waits for the group and is then made alone (and finds the
// key). Nobody returns before its group's commit, so the run row and its
// job commit together or not at all, as alone. Like SQLite's group commit
// (internal/sqlstore/groupcommit.go), no one waits for a group to fill: the
// first caller leads a group of one, whoever arrives meanwhile joins the
// next group.
type enqueueGroup struct {
	q     *Queue
	g     groupcommit.Group[enqueueOp]
	depth depthGate
}

// enqueueOp is one caller's enqueue.
type enqueueOp struct {
	s *db.Session
	r *db.Run
	j *Job
}

// newEnqueueGroup is q's group commit of enqueues.
func newEnqueueGroup(q *Queue) *enqueueGroup {
	g := &enqueueGroup{q: q}
	g.g.Max = maxEnqueueGroup
	g.g.Commit = g.commit
	return g
}

// enqueue commits j with the concurrent callers' enqueues, or returns
// errAlone (or ctx's error, before any group took it).
func (g *enqueueGroup) enqueue(ctx context.Context, s *db.Session, r *db.Run, j *Job) error {
	return g.g.Do(ctx, enqueueOp{s: s, r: r, j: j})
}

// groupRetries bounds how often a group is committed again after one of
// its members failed it.
const groupRetries = 2

// commit writes ops in one piped transaction and sets each op's Err: nil
// when it committed, errAlone otherwise.
func (g *enqueueGroup) commit(ops []*groupcommit.Op[enqueueOp]) (again []*groupcommit.Op[enqueueOp]) {
	type userKey struct{ user, key string }
	seen := make(map[userKey]bool, len(ops))
	group := make([]*groupcommit.Op[enqueueOp], 0, len(ops))
	for _, op := range ops {
		op.Err = errAlone
		if op.Val.j.IdempotencyKey != "" {
			k := userKey{op.Val.j.UserID, op.Val.j.IdempotencyKey}
			if seen[k] {
				continue // alone, after the group: it finds the first's key
			}
			seen[k] = true
		}
		group = append(group, op)
	}
	// Session locks in one order, so that two groups (two replicas) do not
	// wait on each other.
	slices.SortStableFunc(group, func(a, b *groupcommit.Op[enqueueOp]) int {
		return cmp.Compare(a.Val.r.SessionID, b.Val.r.SessionID)
	})
	for try := 0; len(group) > 0 && try <= groupRetries; try++ {
		ws := make([]db.PipedRunWrite, len(group))
		for i, op := range group {
			ws[i] = db.PipedRunWrite{Ctx: op.Ctx, Session: op.Val.s, Run: op.Val.r, Pre: g.q.pipedEnqueue(op.Val.j)}
		}
		var pre []db.PipedStmt
		if now := time.Now(); !g.depth.skip(now, len(group), g.q.cfg.MaxQueueDepth) {
			pre = []db.PipedStmt{g.q.depthStmt(len(group), func(queued int) { g.depth.counted(now, queued) })}
		}
		// Alone: the group must not wait for the pipeline group of the
		// claims and saves in flight, nor hold their next one.
		err := g.q.d.SaveRunsPiped(groupcommit.Alone(context.Background()), pre, ws)
		if err == nil {
			g.depth.added(len(group))
			for _, op := range group {
				op.Err = nil
			}
			return nil
		}
		var pe *db.PipedWriteError
		if !errors.As(err, &pe) || pe.Index < 0 || pe.Index >= len(group) {
			return nil // the whole group is made alone
		}
		group = slices.Delete(group, pe.Index, pe.Index+1)
	}
	return nil
}

// depthFresh is how long an enqueue group trusts its last count of the
// queue's depth.
const depthFresh = 250 * time.Millisecond

// depthGate lets an enqueue group skip its queue-depth count while the
// last count is fresh (depthFresh) and, with every job this process
// enqueued since, at most half of MaxQueueDepth: the count costs the
// server as much as a run's other statements together when the queue is
// deep (it reads up to MaxQueueDepth index entries), and a queue far below
// its bound does not need it. Jobs claimed since only make the estimate
// high. What the estimate cannot see are other processes' enqueues since
// the count: each process can add up to half the bound on a stale count,
// for at most depthFresh, before it counts again; near the bound every
// group counts, and the bound is as exact as without the gate (concurrent
// transactions could always pass it together). ADR
// queue-depth-count-skip.md.
type depthGate struct {
	mu     sync.Mutex
	fresh  time.Duration // depthFresh; tests set their own
	at     time.Time     // when the last count was sent; zero: never counted
	queued int           // the queued jobs it saw, plus this process's enqueues since
}

// skip says whether a group of n may go without counting at now.
func (g *depthGate) skip(now time.Time, n, max int) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	fresh := g.fresh
	if fresh == 0 {
		fresh = depthFresh
	}
	return !g.at.IsZero() && now.Sub(g.at) < fresh && g.queued+n <= max/2
}

// counted records a count sent at now that saw queued jobs.
func (g *depthGate) counted(now time.Time, queued int) {
	g.mu.Lock()
	g.at, g.queued = now, queued
	g.mu.Unlock()
}

// added records n jobs this process enqueued.
func (g *depthGate) added(n int) {
	g.mu.Lock()
	g.queued += n
	g.mu.Unlock()
}

// errKeyUsed: a piped enqueue's key names a run already (enqueueTx reads it).
var errKeyUsed = errors.New("queue: the idempotency key is used")

// errGroupFull: the group's runs would pass MaxQueueDepth.
var errGroupFull = errors.New("queue: the group would pass max_queue_depth")

// depthStmt counts the queued jobs (stopping at MaxQueueDepth), hands the
// count to seen and fails when n more would pass MaxQueueDepth.
func (q *Queue) depthStmt(n int, seen func(queued int)) db.PipedStmt {
	return db.PipedStmt{Query: q.depthQuery, Args: []any{StatusQueued, q.cfg.MaxQueueDepth}, Row: func(sc interface{ Scan(...any) error }) error {
		var queued int
		if err := sc.Scan(&queued); err != nil {
			return err
		}
		seen(queued)
		if queued+n > q.cfg.MaxQueueDepth {
			return errGroupFull
		}
		return nil
	}}
}

// pipedEnqueue is j's statements in a piped enqueue: its idempotency key
// (none when the key names a run already: the enqueue is then made alone),
// then River's job and the agno_jobs row naming it, in one statement.
func (q *Queue) pipedEnqueue(j *Job) []db.PipedStmt {
	stmts := make([]db.PipedStmt, 0, 2)
	if j.IdempotencyKey != "" {
		stmts = append(stmts, db.PipedStmt{Query: q.keyInsertQuery, Args: []any{j.UserID, j.IdempotencyKey, j.ID, j.CreatedAt},
			Row: func(sc interface{ Scan(...any) error }) error {
				var id string
				if err := sc.Scan(&id); err != nil {
					return fmt.Errorf("%w: %w", errKeyUsed, err)
				}
				return nil
			}})
	}
	args, _ := json.Marshal(runArgs{RunID: j.ID, RetryDelay: int64(j.RetryDelay / time.Second)})
	now := time.Now().UTC() // River's driver stamps its jobs with the client's clock
	stmts = append(stmts, db.PipedStmt{Query: q.jobInsertQuery,
		Args: jobInsertArgs(append(make([]any, 0, 22), string(args), now, runArgs{}.Kind(), q.cfg.MaxAttempts, riverPriority, riverQueue, now), j),
		Row: func(sc interface{ Scan(...any) error }) error {
			var engineID int64
			return sc.Scan(&engineID)
		}})
	return stmts
}

// riverPriority is River's default priority, which InsertTx gives our jobs.
const riverPriority = 1

// pipedQueries builds the piped enqueue's statements (? placeholders).
// jobInsertQuery writes River's job row as River's InsertTx does at v0.51.2
// (riverdatabasesql's JobInsertFastMany for one job without unique options:
// created_at and scheduled_at the client's clock, metadata {}, no tags,
// state available)
// and the agno_jobs row with its id as engine_job_id.
// TestPipedEnqueue_RiverRowAsInsertTx compares the two rows.
func (q *Queue) pipedQueries() {
	q.depthQuery = `SELECT COUNT(*) FROM (SELECT 1 FROM ` + q.jobs + ` WHERE status = ? LIMIT ?) AS queued`
	q.keyInsertQuery = `INSERT INTO ` + q.keys + ` (user_id, idempotency_key, run_id, created_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING RETURNING run_id`
	q.jobInsertQuery = `WITH rj AS (INSERT INTO ` + q.table("river_job") + ` (args, created_at, kind, max_attempts, metadata, priority, queue, scheduled_at, state, tags)
	VALUES (CAST(? AS jsonb), ?, ?, ?, '{}', ?, ?, ?, 'available', '{}') RETURNING id)
INSERT INTO ` + q.jobs + ` (` + jobInsertCols + `)
VALUES (?, ?, ?, ?, ?, ?, ?, CAST(? AS jsonb), ?, ?, ?, ?, ?, ?, ?, (SELECT id FROM rj)) RETURNING engine_job_id`
}
