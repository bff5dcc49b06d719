package queue

import (
	"context"
	"database/sql"
	"errors"

	"github.com/agentryhq/agentry/run"
)

// Cancelled is what Cancel did.
type Cancelled struct {
	// Status is the job's status after the cancel: cancelled for a queued
	// job, running for one still executing (it stops at its next step or
	// sooner; wait for its run row), or the status it had finished with.
	Status string
}

// Cancel cancels a job's run. A queued (or paused) job is cancelled at once,
// with its run row, in one transaction, and never takes a worker slot. A
// running job is flagged in the database: the process holding it cancels
// the run's context at once when it is this one, else at its next heartbeat
// (PollInterval); its worker then stores the run CANCELLED. A finished job
// is left as it is. ErrNotFound: no job for this run (not a durable run).
func (q *Queue) Cancel(ctx context.Context, runID string) (Cancelled, error) {
	now := unixNow()
	var res Cancelled
	var cancelledRow bool
	err := q.inTx(ctx, func(tx *sql.Tx) error {
		j, err := q.scanJob(tx.QueryRowContext(ctx, q.sql(`SELECT `+jobColumns+`, cancel_requested_at FROM `+q.jobs+` WHERE id = ?`+q.forUpdate()), runID), true)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return ErrNotFound
		case err != nil:
			return err
		}
		res.Status = j.Status
		switch j.Status {
		case StatusQueued, StatusPaused:
			if _, err := tx.ExecContext(ctx, q.sql(`UPDATE `+q.jobs+` SET status = ?, error = ?, cancel_requested_at = ?, completed_at = ?, updated_at = ? WHERE id = ?`),
				StatusCancelled, "cancelled before it started", now, now, now, runID); err != nil {
				return err
			}
			if j.engineID != 0 {
				if _, err := q.client.JobCancelTx(ctx, tx, j.engineID); err != nil {
					return err
				}
			}
			res.Status, cancelledRow = StatusCancelled, true
		case StatusRunning:
			if _, err := tx.ExecContext(ctx, q.sql(`UPDATE `+q.jobs+` SET cancel_requested_at = ?, updated_at = ? WHERE id = ?`), now, now, runID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return Cancelled{}, err
	}
	if cancelledRow {
		q.setRunStatus(ctx, runID, run.StatusCancelled, "run "+runID+" was cancelled before it started", nil)
	}
	if res.Status == StatusRunning {
		q.mu.Lock()
		h := q.running[runID]
		q.mu.Unlock()
		if h != nil {
			h.cancel(ErrCancelled)
		}
	}
	return res, nil
}
