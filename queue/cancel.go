package queue

import (
	"context"
	"database/sql"
	"errors"

	"github.com/agentryhq/agentry/db"
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
// is left as it is, and a paused job whose run has ended (continued outside
// the queue) records the run's end instead (Cancelled.Status says which).
// ErrNotFound: no job for this run (not a durable run).
func (q *Queue) Cancel(ctx context.Context, runID string) (Cancelled, error) {
	if done, err := q.cancelQueued(ctx, runID); done || err != nil {
		return Cancelled{Status: StatusCancelled}, err
	}
	now := unixNow()
	var res Cancelled
	var cancelledRow bool
	var ended *endedJob // a paused job whose run ended: ended as the repair pass ends it
	attempt := 0
	cancelTx := func(ctx context.Context, tx *sql.Tx) error {
		j, err := q.scanJob(tx.QueryRowContext(ctx, q.sql(`SELECT `+jobColumns+`, cancel_requested_at FROM `+q.jobs+` WHERE id = ?`+q.forUpdate()), runID), true)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return ErrNotFound
		case err != nil:
			return err
		}
		res.Status, attempt = j.Status, j.Attempt
		switch j.Status {
		case StatusPaused:
			// A paused job whose run ended without its job recording it (a
			// paused run continued to its end outside the queue) records
			// that end after this transaction, as the repair pass does
			// (endPaused), and nothing is cancelled. (A queued job's run is
			// PENDING, or ERROR or CANCELLED until a Requeue's second write
			// moves it: it is cancelled.)
			statuses, err := q.runStatuses(ctx, []string{runID})
			if err != nil {
				return err
			}
			switch st := statuses[runID]; st {
			case run.StatusCompleted, run.StatusError, run.StatusCancelled:
				res.Status, ended = jobStatusOf(st), &endedJob{id: runID, attempt: j.Attempt}
				return nil
			}
			fallthrough
		case StatusQueued:
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
	}
	// Bounded by the database's query timeout, as the front's calls are: a
	// statement stuck behind a lock (a migration's, a long DDL's) ends with
	// db.ErrUnavailable instead of waiting as long as the caller does.
	err := q.boundedTx(ctx, cancelTx)
	if err != nil {
		return Cancelled{}, err
	}
	if ended != nil {
		if err := q.endPaused(ctx, *ended, res.Status); err != nil {
			return Cancelled{}, err
		}
	}
	if cancelledRow {
		// Fenced on the job still cancelled at its attempt: a Requeue may
		// follow the cancel's commit and move the run to PENDING first.
		q.setRunStatus(ctx, runID, run.StatusCancelled, "run "+runID+" was cancelled before it started", q.jobAtFence(runID, attempt, StatusCancelled))
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

// errNotQueued rolls back cancelQueued's transaction for a job that is not
// waiting.
var errNotQueued = errors.New("queue: the job is not queued")

// cancelQueued cancels a queued (or paused) job, its River job and its run
// row in one transaction. done is false when the job is not waiting (or
// its run cannot be read); Cancel then goes on.
//
// The CANCELLED row is built from a read taken before the transaction,
// which writes it only while the run's row is still the one read
// (runUnchanged); otherwise it starts over from a new read. Without that,
// a change committed in between (a paused run continued to its end by its
// continue route, which writes the run row only) was overwritten.
func (q *Queue) cancelQueued(ctx context.Context, runID string) (done bool, err error) {
	for try := 1; ; try++ {
		done, err = q.cancelQueuedOnce(ctx, runID)
		if !errors.Is(err, errRunChanged) || try == requeueTries {
			return done, err
		}
	}
}

// cancelQueuedOnce is one read and transaction of cancelQueued.
func (q *Queue) cancelQueuedOnce(ctx context.Context, runID string) (done bool, err error) {
	row, err := q.d.GetRun(ctx, runID)
	if err != nil {
		return false, nil
	}
	if q.cancelRead != nil {
		q.cancelRead(runID)
	}
	switch row.Status {
	case run.StatusPending, run.StatusPaused, run.StatusRunning:
	default:
		return false, nil
	}
	out, err := row.Output()
	if err != nil {
		return false, nil
	}
	now := unixNow()
	jobErr := "cancelled before it started"
	out.Content = "run " + runID + " was cancelled before it started"
	if row.Status == run.StatusPaused {
		jobErr, out.Content = "cancelled while paused", "run "+runID+" was cancelled while paused"
	}
	// The run waits for nothing any more: what its pause awaited (an agent's
	// or team's requirements, a workflow's step and error requirements and
	// paused step) is cleared, as a run ending CANCELLED on its own stores it.
	out.Status, out.ContentType = run.StatusCancelled, "str"
	out.ClearPause()
	out.UpdatedAt = now
	next, err := db.RunFromOutput(out)
	if err != nil {
		return false, nil
	}
	with := func(ctx context.Context, tx *sql.Tx) error {
		j, err := q.scanJob(tx.QueryRowContext(ctx, q.sql(`SELECT `+jobColumns+`, cancel_requested_at FROM `+q.jobs+` WHERE id = ?`+q.forUpdate()), runID), true)
		switch {
		case err != nil:
			return errNotQueued
		case j.Status != StatusQueued && j.Status != StatusPaused:
			return errNotQueued
		}
		// The run's row, locked after the job's (the claims' order).
		if err := q.runUnchanged(ctx, tx, row); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, q.sql(`UPDATE `+q.jobs+` SET status = ?, error = ?, cancel_requested_at = ?, completed_at = ?, updated_at = ? WHERE id = ?`),
			StatusCancelled, jobErr, now, now, now, runID); err != nil {
			return err
		}
		if j.engineID != 0 {
			if _, err := q.client.JobCancelTx(ctx, tx, j.engineID); err != nil {
				return err
			}
		}
		return nil
	}
	_, _, err = q.d.SaveRunWith(ctx, nil, next, with)
	switch {
	case errors.Is(err, errNotQueued):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}
