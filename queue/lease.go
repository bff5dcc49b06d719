package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// heartbeatEvery is how often leases are renewed and looked at.
func (q *Queue) heartbeatEvery() time.Duration {
	return min(q.cfg.PollInterval, q.cfg.LockGrace/4)
}

// leaseLoop heartbeats this node's leases, delivers cancellations and
// fencing to its running jobs, takes over jobs whose lease expired and
// deletes finished jobs past retention.
func (q *Queue) leaseLoop() {
	defer q.loops.Done()
	t := time.NewTicker(q.heartbeatEvery())
	defer t.Stop()
	lastRetention, lastRescue := time.Time{}, time.Time{}
	gate := sweepGate{every: q.renewEvery(), last: time.Now(), steady: time.Now()}
	for {
		select {
		case <-q.life.Done():
			return
		case <-t.C:
		}
		ctx := q.life
		// Every statement of the loop ends at the database's query timeout
		// (db.DB.Bound): one stuck behind a lock (a migration's, a long
		// DDL's) stalled the loop, its heartbeats and its sweeps for as
		// long as the lock was held.
		err := q.heartbeat(ctx)
		if err != nil && ctx.Err() == nil {
			q.cfg.Logger.WarnContext(ctx, "queue: heartbeat", "err", err)
		}
		// The turn is timed after the heartbeat: a heartbeat that took
		// long (a slow database) makes the turn late.
		now := time.Now()
		gate.tick(now)
		gate.after(now, err)
		if gate.maySweep(now) {
			err := q.sweep(ctx, now.Add(-q.cfg.LockGrace).Unix())
			gate.after(time.Now(), err)
			if err != nil && ctx.Err() == nil {
				q.cfg.Logger.WarnContext(ctx, "queue: lease sweep", "err", err)
			}
		}
		// A fetched job is rescued once unclaimed for LockGrace: looking
		// every renewal period (LockGrace/4) is soon enough, and a look at
		// every poll was a statement per poll (0.1 per run at 200 runs/s).
		if now.Sub(lastRescue) >= q.renewEvery() {
			lastRescue = now
			err := q.rescueUnclaimed(ctx)
			gate.after(time.Now(), err)
			if err != nil && ctx.Err() == nil {
				q.cfg.Logger.WarnContext(ctx, "queue: rescue unclaimed jobs", "err", err)
			}
		}
		q.pruneClaimFailures(now)
		if time.Since(lastRetention) > time.Minute {
			lastRetention = time.Now()
			q.deleteExpired(ctx)
		}
	}
}

// sweepGate decides when the lease loop may sweep. A loop that was itself
// stalled (the process starved of CPU, the host paused) cannot tell a dead
// node from one stalled with it: every node on the host missed its
// renewals alike. Neither can a loop whose statements could not run (ended
// at the query timeout behind a lock, the database unreachable): every
// node's renewals waited on the same database, and the leases they could
// not renew look expired the moment it answers again. The loop sweeps
// again only after ticking on time, with its statements answered, for a
// renewal period, which gives the others the time to renew.
type sweepGate struct {
	every        time.Duration // the renewal period
	last, steady time.Time
}

// tick notes a loop turn at now: a turn late by more than a renewal
// period starts the wait again.
func (g *sweepGate) tick(now time.Time) {
	if now.Sub(g.last) > g.every {
		g.steady = now
	}
	g.last = now
}

// after notes the outcome of a statement of the turn: the database not
// answering (db.ErrUnavailable, the query timeout's error included) starts
// the wait again from when it gave up.
func (g *sweepGate) after(now time.Time, err error) {
	if errors.Is(err, db.ErrUnavailable) {
		g.steady = now
	}
}

// maySweep reports whether the loop has been steady for a renewal period.
func (g *sweepGate) maySweep(now time.Time) bool {
	return now.Sub(g.steady) >= g.every
}

// bounded runs fn with the database's query timeout (db.DB.Bound) and its
// error mapping: past the timeout, db.ErrUnavailable.
func (q *Queue) bounded(ctx context.Context, fn func(ctx context.Context) error) error {
	bctx, done := q.d.Bound(ctx)
	return done(fn(bctx))
}

// boundedTx runs fn in a transaction of its own (inTx) bounded by the
// database's query timeout (bounded).
func (q *Queue) boundedTx(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error) error {
	return q.bounded(ctx, func(ctx context.Context) error {
		return q.inTx(ctx, func(tx *sql.Tx) error { return fn(ctx, tx) })
	})
}

// renewEvery is how often held leases are renewed: lock_grace/4, at least
// a poll.
func (q *Queue) renewEvery() time.Duration {
	return max(q.cfg.LockGrace/4, q.heartbeatEvery())
}

// heartbeat renews this node's leases and stops the runs it holds that
// were cancelled (through any process) or taken over.
func (q *Queue) heartbeat(ctx context.Context) error {
	if q.paused.Load() {
		return nil
	}
	q.mu.Lock()
	held := make(map[string]*holding, len(q.running))
	for id, h := range q.running {
		if h.finished != "" {
			continue // its outcome is recorded: no lease to renew
		}
		held[id] = h
	}
	q.mu.Unlock()
	if len(held) == 0 {
		return nil
	}
	renewed, err := q.heartbeatHeld(ctx, held, time.Since(q.renewed) >= q.renewEvery())
	if renewed {
		q.renewed = time.Now()
	}
	return err
}

// heartbeatHeld renews the leases of held when renew (renewed: it did),
// then stops the runs of held that were cancelled or taken over.
func (q *Queue) heartbeatHeld(ctx context.Context, held map[string]*holding, renew bool) (renewed bool, err error) {
	ids := make([]any, 0, len(held))
	for id := range held {
		ids = append(ids, id)
	}
	// Only the leases of runs this process executes: a row locked by this
	// node that no worker holds (its worker ended without recording) must
	// expire and be taken over. A lease is renewed once a quarter of
	// lock_grace has passed since the last renewal (locked_at counts
	// seconds: renewing at every poll would rewrite the same value), so a
	// live lease is never older than lock_grace/4 plus one poll; the read
	// below (cancellation, takeover) runs at every poll.
	//
	// A renewal that ended at the query timeout is tried again at the next
	// poll (renewed is not moved): the leases are not given up, and the
	// runs go on; only a takeover or a cancel read below stops one.
	if renew {
		if err := q.bounded(ctx, func(ctx context.Context) error { return q.renew(ctx, ids) }); err != nil {
			return false, err
		}
		renewed = true
	}
	type leaseRow struct {
		id, status, by string
		attempt        int
		cancelled      bool
		engine         int64
	}
	var got []leaseRow
	err = q.bounded(ctx, func(ctx context.Context) error {
		rows, err := q.w.QueryContext(ctx, q.sql(`SELECT id, attempt, locked_by, status, cancel_requested_at, `+engineCol+` FROM `+q.jobs+` WHERE id IN (`+placeholders(len(ids))+`)`), ids...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var r leaseRow
			var by sql.NullString
			var cancelAt sql.NullInt64
			if err := rows.Scan(&r.id, &r.attempt, &by, &r.status, &cancelAt, &r.engine); err != nil {
				return err
			}
			r.by, r.cancelled = by.String, cancelAt.Valid
			got = append(got, r)
		}
		return rows.Err()
	})
	if err != nil {
		// Nothing is stopped on a read that did not finish: a row it did
		// not reach is not a deleted one.
		return renewed, err
	}
	seen := map[string]bool{}
	for _, r := range got {
		id := r.id
		seen[id] = true
		h := held[id]
		switch {
		case q.finishedHere(id, h.attempt, h.engine) != "":
			// Finished since the copy: its final save released the lease.
		case r.engine != h.engine:
			// Deleted, and the run id enqueued again.
			h.cancel(jobGone(id))
		case r.attempt != h.attempt || r.by != q.cfg.NodeID || r.status != StatusRunning:
			h.cancel(fmt.Errorf("%w: run %s is at attempt %d on %s", run.ErrFenced, id, r.attempt, r.by))
		case r.cancelled:
			h.cancel(ErrCancelled)
		}
	}
	for id, h := range held {
		if !seen[id] && q.finishedHere(id, h.attempt, h.engine) == "" {
			h.cancel(jobGone(id))
		}
	}
	return renewed, nil
}

// renew stamps the leases of ids with the time the write runs. The
// connection is taken first and the clock read after: on SQLite the writer
// is one connection that a group commit or River can hold for a while
// under load, and a stamp read before that wait made a live node's lease
// look older than it was, so that another node's sweep took over a
// slow-but-alive run.
func (q *Queue) renew(ctx context.Context, ids []any) error {
	conn, err := q.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, q.renewSQL(len(ids)), append([]any{unixNow(), q.cfg.NodeID, StatusRunning}, ids...)...)
	return err
}

// renewSQL renews n leases (arguments: the time, this node, running, the
// ids). On Postgres it locks the rows first, in id order (byte order, as
// the pipeline groups sort their members by job id: db.WithLockKey): a
// plain UPDATE locks them in its scan's order, and against a group that
// held one row and waited for another the two deadlocked until Postgres
// broke it after deadlock_timeout. SQLite has one writer: no lock order.
func (q *Queue) renewSQL(n int) string {
	if q.dialect != "postgres" {
		return q.sql(`UPDATE ` + q.jobs + ` SET locked_at = ? WHERE locked_by = ? AND status = ? AND id IN (` + placeholders(n) + `)`)
	}
	var ids strings.Builder
	for i := range n {
		if i > 0 {
			ids.WriteString(", ")
		}
		fmt.Fprintf(&ids, "$%d", i+4)
	}
	return `WITH held AS (SELECT id FROM ` + q.jobs + ` WHERE locked_by = $2 AND status = $3 AND id IN (` + ids.String() + `) ORDER BY id COLLATE "C" FOR UPDATE)
UPDATE ` + q.jobs + ` AS j SET locked_at = $1 FROM held WHERE j.id = held.id AND j.locked_by = $2 AND j.status = $3`
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// recoverAll, on a single node at start, treats every running job as an
// orphan of the crashed process: each is requeued at once (or failed when
// out of attempts), and runs left RUNNING or PENDING without a live job
// (streamed or synchronous runs cut by the crash) are marked ERROR.
func (q *Queue) recoverAll(ctx context.Context) error {
	if err := q.sweep(ctx, unixNow()+1); err != nil {
		return err
	}
	// River jobs fetched by the crashed process before it claimed their
	// rows are still "running" for River, their rows queued.
	if _, err := q.w.ExecContext(ctx, q.sql(`UPDATE `+q.table("river_job")+` SET state = 'available', scheduled_at = `+q.nowSQL()+` WHERE state = 'running' AND queue = ?`), riverQueue); err != nil {
		return err
	}
	return q.errorOrphanRuns(ctx)
}

// rescueUnclaimed makes available again the River jobs a process fetched
// and died before claiming: River says running, the row says queued, and
// River's attempt started more than LockGrace ago (a live process claims
// within moments of fetching). Postgres only: a single SQLite node does it
// at start.
func (q *Queue) rescueUnclaimed(ctx context.Context) error {
	if q.dialect != "postgres" {
		return nil
	}
	return q.bounded(ctx, func(ctx context.Context) error {
		_, err := q.w.ExecContext(ctx, `UPDATE `+q.table("river_job")+` SET state = 'available', scheduled_at = now()
WHERE state = 'running' AND queue = $1 AND attempted_at < now() - make_interval(secs => $2)
	AND id IN (SELECT engine_job_id FROM `+q.jobs+` WHERE status = $3)`, riverQueue, q.cfg.LockGrace.Seconds(), StatusQueued)
		return err
	})
}

// sweep takes over the running jobs whose lease is older than cutoff: each
// goes back to queued (its River job made available again), or to failed
// when it used all its attempts, or to cancelled when a cancel was asked.
// Each takeover is conditional on the row being unchanged, so two replicas
// sweeping at once take a job over once.
func (q *Queue) sweep(ctx context.Context, cutoff int64) error {
	var stale []*claimedJob
	err := q.bounded(ctx, func(ctx context.Context) error {
		rows, err := q.w.QueryContext(ctx, q.sql(`SELECT `+jobColumns+`, cancel_requested_at FROM `+q.jobs+` WHERE status = ? AND (locked_at IS NULL OR locked_at < ?)`), StatusRunning, cutoff)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			j, err := q.scanJob(rows, true)
			if err != nil {
				return err
			}
			stale = append(stale, j)
		}
		return rows.Err()
	})
	if err != nil {
		return err
	}
	for _, j := range stale {
		if err := q.takeOver(ctx, j, cutoff); err != nil {
			return err
		}
	}
	return nil
}

func (q *Queue) takeOver(ctx context.Context, j *claimedJob, cutoff int64) error {
	now := unixNow()
	var status, reason string
	runStatus := run.StatusPending
	switch {
	case j.CancelRequested:
		status, reason, runStatus = StatusCancelled, "cancelled while its worker was gone", run.StatusCancelled
	case j.Attempt >= j.MaxAttempts:
		status, runStatus = StatusFailed, run.StatusError
		reason = fmt.Sprintf("the worker running attempt %d of %d (%s) stopped without finishing it (max_attempts reached)", j.Attempt, j.MaxAttempts, j.LockedBy)
	default:
		status, reason = StatusQueued, fmt.Sprintf("attempt %d was interrupted: its worker %s stopped", j.Attempt, j.LockedBy)
	}
	if j.JobType == JobTypeForeground && status == StatusFailed {
		reason = fmt.Sprintf("the server executing this streamed run (%s) stopped before it finished", j.LockedBy)
	}
	took := false
	takeOverTx := func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q.sql(`UPDATE `+q.jobs+` SET status = ?, error = ?, locked_by = NULL, locked_at = NULL, updated_at = ?, available_at = ?,
	completed_at = CASE WHEN ? THEN ? ELSE completed_at END
WHERE id = ? AND attempt = ? AND status = ? AND (locked_at IS NULL OR locked_at < ?)`),
			status, reason, now, now, status != StatusQueued, now, j.ID, j.Attempt, StatusRunning, cutoff)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n != 1 {
			return nil
		}
		took = true
		if j.engineID == 0 {
			return nil
		}
		// River has no heartbeat: its job is still "running" (River would
		// rescue it only after RescueStuckJobsAfter). Make it available, or
		// finalize it, in the same transaction.
		state, fin := "available", "NULL"
		if status != StatusQueued {
			state, fin = "cancelled", q.nowSQL()
		}
		_, err = tx.ExecContext(ctx, q.sql(`UPDATE `+q.table("river_job")+` SET state = ?, scheduled_at = `+q.nowSQL()+`, finalized_at = `+fin+` WHERE id = ?`), state, j.engineID)
		return err
	}
	err := q.boundedTx(ctx, takeOverTx)
	if err != nil || !took {
		return err
	}
	q.cfg.Logger.InfoContext(ctx, "queue: took over a run", "run_id", j.ID, "attempt", j.Attempt, "from", j.LockedBy, "now", status)
	content := ""
	if status != StatusQueued {
		content = reason
		q.clearJournal(ctx, j.ID)
	}
	q.setRunStatus(ctx, j.ID, runStatus, content, q.jobAtFence(j.ID, j.Attempt, status))
	return nil
}

// nowSQL is the dialect's current timestamp for River's columns.
func (q *Queue) nowSQL() string {
	if q.dialect == "postgres" {
		return "now()"
	}
	return "datetime('now', 'subsec')"
}

// errorOrphanRuns marks ERROR the runs left PENDING or RUNNING that no live
// job holds: on a single node after a crash, nothing executes them.
func (q *Queue) errorOrphanRuns(ctx context.Context) error {
	live := map[string]bool{}
	rows, err := q.w.QueryContext(ctx, q.sql(`SELECT id FROM `+q.jobs+` WHERE status IN (?, ?)`), StatusQueued, StatusRunning)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		live[id] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	return q.eachLiveRunPage(ctx, func(ids []any) error {
		for _, id := range ids {
			if id := id.(string); !live[id] {
				q.setRunStatus(ctx, id, run.StatusError, "the server stopped while the run was executing", nil)
			}
		}
		return nil
	})
}

// deleteExpired deletes finished jobs past retention (their idempotency
// keys stay).
func (q *Queue) deleteExpired(ctx context.Context) {
	cutoff := unixNow() - int64(q.cfg.Retention/time.Second)
	err := q.bounded(ctx, func(ctx context.Context) error {
		_, err := q.w.ExecContext(ctx, q.retentionQuery(), StatusCompleted, StatusFailed, StatusCancelled, cutoff, cutoff)
		return err
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		q.cfg.Logger.WarnContext(ctx, "queue: delete expired jobs", "err", err)
	}
}

// retentionQuery deletes the finished jobs completed before a cutoff
// (arguments: the three final statuses, the cutoff twice). A job completes
// after it was created, so it was also created before the cutoff: that
// condition lets an index of created_at find the expired jobs instead of a
// scan of every finished job (nearly the whole table) each minute.
func (q *Queue) retentionQuery() string {
	return q.sql(`DELETE FROM ` + q.jobs + ` WHERE status IN (?, ?, ?) AND completed_at < ? AND created_at < ?`)
}
