package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// JobTypeForeground is the job_type of a foreground run's lease row.
const JobTypeForeground = "foreground"

// Hold gives a foreground run (streamed or synchronous: executed by the
// request, not dispatched) a lease row in agno_jobs, held by this node and
// renewed by its heartbeat like a background job's. If this process dies,
// any replica's lease sweep marks the row failed and the run ERROR after
// LockGrace (a single node does it at restart); a slow but live run keeps
// its lease. The row has one attempt and no River job: it is never run
// again. The returned context is cancelled when the run is cancelled
// through any replica (cause ErrCancelled) or loses its lease (run.ErrFenced);
// its run writes are fenced on the lease. done releases the lease (its
// row is deleted); call it once when the run ended.
func (q *Queue) Hold(ctx context.Context, j *Job) (context.Context, func(run.Status), error) {
	// Bounded by the database's query timeout: behind a lock (a
	// migration's) the request's run waited for as long as its client did.
	err := q.bounded(ctx, func(ctx context.Context) error {
		_, err := q.w.ExecContext(ctx, q.sql(q.insertLeaseSQL()), q.leaseArgs(j)...)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("queue: lease of foreground run %s: %w", j.ID, err)
	}
	rctx, done := q.holdLease(ctx, j.ID, 1, 0, true)
	return rctx, done, nil
}

// insertLeaseSQL inserts a foreground run's lease row (leaseArgs).
func (q *Queue) insertLeaseSQL() string {
	return `INSERT INTO ` + q.jobs + ` (id, component_type, job_type, deployment_id, component_id, session_id, user_id, payload,
	status, attempt, max_attempts, available_at, locked_by, locked_at, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 1, ?, ?, ?, ?, ?)`
}

// leaseArgs are insertLeaseSQL's arguments for j, held by this node now.
func (q *Queue) leaseArgs(j *Job) []any {
	now := unixNow()
	return []any{j.ID, j.ComponentType, JobTypeForeground, nullable(q.cfg.DeploymentID), j.ComponentID, j.SessionID, nullable(j.UserID), "{}",
		StatusRunning, now, q.cfg.NodeID, now, now, now}
}

// holdLease notes that this process executes attempt of id's job (engine's)
// in the foreground: the returned context is cancelled by a cancel or a
// lost lease, and its writes are fenced on the lease. done releases it:
// a lease row the hold inserted (own) is deleted, as Hold's; a paused
// job's row (HoldContinue) takes the run's end when the run's final save
// did not record it.
func (q *Queue) holdLease(ctx context.Context, id string, attempt int, engine int64, own bool) (context.Context, func(run.Status)) {
	rctx, cancel := context.WithCancelCause(ctx)
	h := &holding{attempt: attempt, engine: engine, cancel: cancel, foreground: true}
	q.mu.Lock()
	q.running[id] = h
	q.mu.Unlock()
	rctx = db.WithWriteFence(rctx, q.fence(id, attempt, engine))
	done := func(status run.Status) {
		// The run's final save may have recorded the outcome on the row
		// already (the fence does it in the save's transaction, clearing
		// locked_by): such a row is ours to delete too.
		fin := q.finishedHere(id, attempt, engine)
		q.release(id, h)
		wctx := context.WithoutCancel(ctx)
		switch {
		case own:
			// The lease has done its work: its row goes (one statement, no
			// journal to clear). Rows of dead nodes' runs stay, failed,
			// until retention.
			if _, err := q.w.ExecContext(wctx, q.sql(`DELETE FROM `+q.jobs+` WHERE id = ? AND attempt = 1 AND job_type = ?
AND (locked_by = ? OR (locked_by IS NULL AND status = ?))`), id, JobTypeForeground, q.cfg.NodeID, fin); err != nil {
				q.cfg.Logger.WarnContext(ctx, "queue: release a foreground lease", "run_id", id, "err", err)
			}
		case fin == "":
			// The continue ended without its final save recording the
			// outcome: still paused (it stored nothing), or its end could
			// not be stored (the repair moves a run left behind its job).
			js, reason := jobStatusOf(status), ""
			switch status {
			case run.StatusPaused:
			case run.StatusCompleted, run.StatusError, run.StatusCancelled:
			default:
				reason = "the continue of run " + id + " ended without storing the run's end"
			}
			q.finish(wctx, id, attempt, engine, js, reason)
		}
		cancel(nil)
	}
	return rctx, done
}

// HoldContinue gives the continue of a PAUSED run (executed by the request
// that continues it, as a foreground run is) a lease on the run's job row,
// held by this node and renewed by its heartbeat:
//   - a paused job (a background run that paused) goes to running at its
//     next attempt, which is also its last (max_attempts = attempt): the
//     queue cannot run a continue again (its answers are not in the job's
//     payload), so if this process dies the lease sweep fails the job and
//     marks the run ERROR after LockGrace (a single node at restart),
//     instead of leaving it RUNNING for good. The run's final save records
//     the job's end (completed, failed, cancelled, or paused again);
//   - a run without a job row (a streamed or synchronous run that paused)
//     gets a foreground lease, as Hold gives one;
//   - a job in any other state (queued, running: executed or continued by
//     another process; ended) is ErrHeld, and nothing is written.
//
// The hold is conditional on the row, so two processes continuing the same
// run at once (two replicas; an approval resolved on one while the
// continue route runs on another) cannot both execute it. The returned
// context is cancelled when the run is cancelled through any replica
// (cause ErrCancelled) or loses its lease (run.ErrFenced), and its run
// writes are fenced on the lease. done releases the lease with the run's
// stored status; call it once when the continue ended.
func (q *Queue) HoldContinue(ctx context.Context, j *Job) (context.Context, func(run.Status), error) {
	var attempt int
	var engine int64
	own := false
	holdTx := func(ctx context.Context, tx *sql.Tx) error {
		attempt, engine, own = 0, 0, false
		var status string
		var cur int
		var eng sql.NullInt64
		err := tx.QueryRowContext(ctx, q.sql(`SELECT status, attempt, engine_job_id FROM `+q.jobs+` WHERE id = ?`+q.forUpdate()), j.ID).Scan(&status, &cur, &eng)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			// Another process inserting the same lease meanwhile: one row.
			res, err := tx.ExecContext(ctx, q.sql(q.insertLeaseSQL()+` ON CONFLICT (id) DO NOTHING`), q.leaseArgs(j)...)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 1 {
				return cmpErr(err, fmt.Errorf("%w: run %s is being continued by another process", ErrHeld, j.ID))
			}
			attempt, own = 1, true
			return nil
		case err != nil:
			return err
		case status != StatusPaused:
			return fmt.Errorf("%w: run %s's job is %s", ErrHeld, j.ID, status)
		}
		now := unixNow()
		res, err := tx.ExecContext(ctx, q.sql(`UPDATE `+q.jobs+` SET status = ?, attempt = ?, max_attempts = ?, locked_by = ?, locked_at = ?, error = NULL,
	cancel_requested_at = NULL, completed_at = NULL, updated_at = ? WHERE id = ? AND status = ? AND attempt = ?`),
			StatusRunning, cur+1, cur+1, q.cfg.NodeID, now, now, j.ID, StatusPaused, cur)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return cmpErr(err, fmt.Errorf("%w: run %s is being continued by another process", ErrHeld, j.ID))
		}
		attempt, engine = cur+1, eng.Int64
		return nil
	}
	if err := q.boundedTx(ctx, holdTx); err != nil {
		if errors.Is(err, ErrHeld) {
			return nil, nil, err
		}
		return nil, nil, fmt.Errorf("queue: lease of the continue of run %s: %w", j.ID, err)
	}
	rctx, done := q.holdLease(ctx, j.ID, attempt, engine, own)
	return rctx, done, nil
}

// cmpErr is err when there is one, else alt.
func cmpErr(err, alt error) error {
	if err != nil {
		return err
	}
	return alt
}
