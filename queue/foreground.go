package queue

import (
	"context"
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
	now := unixNow()
	// Bounded by the database's query timeout: behind a lock (a
	// migration's) the request's run waited for as long as its client did.
	err := q.bounded(ctx, func(ctx context.Context) error {
		_, err := q.w.ExecContext(ctx, q.sql(`INSERT INTO `+q.jobs+` (id, component_type, job_type, deployment_id, component_id, session_id, user_id, payload,
	status, attempt, max_attempts, available_at, locked_by, locked_at, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1, 1, ?, ?, ?, ?, ?)`),
			j.ID, j.ComponentType, JobTypeForeground, nullable(q.cfg.DeploymentID), j.ComponentID, j.SessionID, nullable(j.UserID), "{}",
			StatusRunning, now, q.cfg.NodeID, now, now, now)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("queue: lease of foreground run %s: %w", j.ID, err)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	h := &holding{attempt: 1, cancel: cancel, foreground: true}
	q.mu.Lock()
	q.running[j.ID] = h
	q.mu.Unlock()
	rctx = db.WithWriteFence(rctx, q.fence(j.ID, 1, 0))
	done := func(run.Status) {
		// The run's final save may have recorded the outcome on the row
		// already (the fence does it in the save's transaction, clearing
		// locked_by): such a row is ours to delete too.
		fin := q.finishedHere(j.ID, 1, 0)
		q.release(j.ID, h)
		// The lease has done its work: its row goes (one statement, no
		// journal to clear). Rows of dead nodes' runs stay, failed, until
		// retention.
		if _, err := q.w.ExecContext(context.WithoutCancel(ctx), q.sql(`DELETE FROM `+q.jobs+` WHERE id = ? AND attempt = 1 AND job_type = ?
AND (locked_by = ? OR (locked_by IS NULL AND status = ?))`), j.ID, JobTypeForeground, q.cfg.NodeID, fin); err != nil {
			q.cfg.Logger.WarnContext(ctx, "queue: release a foreground lease", "run_id", j.ID, "err", err)
		}
		cancel(nil)
	}
	return rctx, done, nil
}
