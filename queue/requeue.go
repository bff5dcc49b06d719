package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// Requeue puts a failed or cancelled job back in line with MaxAttempts more
// attempts; its run goes back to PENDING in the same transaction, so that a
// database refusing the run's write refuses the requeue: as a second write
// it left the job queued with its run ERROR, and the claim, finding the run
// final, ended the job failed again (with no reason) without running it.
// A run that is not ERROR or CANCELLED (left behind its job) is moved after
// the job's commit, fenced on the job.
func (q *Queue) Requeue(ctx context.Context, id string) (*Job, error) {
	now := unixNow()
	attempt := 0
	requeue := func(ctx context.Context, tx *sql.Tx) error {
		j, err := q.scanJob(tx.QueryRowContext(ctx, q.sql(`SELECT `+jobColumns+`, cancel_requested_at FROM `+q.jobs+` WHERE id = ?`+q.forUpdate()), id), true)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return ErrNotFound
		case err != nil:
			return err
		case j.Status != StatusFailed && j.Status != StatusCancelled:
			return fmt.Errorf("%w (job %s is %s)", ErrNotRequeueable, id, j.Status)
		case j.JobType == JobTypeForeground || j.engineID == 0:
			// A streamed or synchronous run's lease: no engine job
			// dispatches it and its payload holds nothing to run. Queued,
			// it would wait forever (and count against max_queue_depth).
			return fmt.Errorf("%w (job %s is the lease of a streamed or synchronous run, which cannot run again)", ErrNotRequeueable, id)
		}
		attempt = j.Attempt
		if _, err := tx.ExecContext(ctx, q.sql(`UPDATE `+q.jobs+` SET status = ?, max_attempts = ?, error = NULL, cancel_requested_at = NULL, completed_at = NULL,
	locked_by = NULL, locked_at = NULL, available_at = ?, updated_at = ? WHERE id = ?`), StatusQueued, j.Attempt+q.cfg.MaxAttempts, now, now, id); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, q.sql(`UPDATE `+q.table("river_job")+` SET state = 'available', finalized_at = NULL, scheduled_at = `+q.nowSQL()+`,
	max_attempts = attempt + ? WHERE id = ?`), q.cfg.MaxAttempts, j.engineID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n != 1 {
			// The engine's retention deleted its job first (it keeps
			// finished jobs as long as agno_jobs, cleaned on its own
			// clock): nothing would dispatch the row.
			return fmt.Errorf("%w (job %s: its engine job was deleted by retention)", ErrNotRequeueable, id)
		}
		return nil
	}
	tctx, done := q.d.Bound(ctx)
	var err error
	next := q.requeuedRun(tctx, id)
	if next != nil {
		_, _, err = q.d.SaveRunWith(tctx, nil, next, requeue)
	} else {
		err = q.inTx(tctx, func(tx *sql.Tx) error { return requeue(tctx, tx) })
	}
	if err = done(err); err != nil {
		return nil, err
	}
	if next == nil {
		q.setRunStatus(ctx, id, run.StatusPending, "", q.jobAtFence(id, attempt, StatusQueued))
	}
	return q.Get(ctx, id, "", false)
}

// requeuedRun is id's run row moved back to PENDING for Requeue's
// transaction, or nil when the row is not ERROR or CANCELLED (or cannot be
// read: Requeue then moves it as a second write, as moveRun decides).
func (q *Queue) requeuedRun(ctx context.Context, id string) *db.Run {
	row, err := q.d.GetRun(ctx, id)
	if err != nil || row.Status != run.StatusError && row.Status != run.StatusCancelled {
		return nil
	}
	out, err := row.Output()
	if err != nil {
		return nil
	}
	out.Status, out.UpdatedAt = run.StatusPending, time.Now().Unix()
	next, err := db.RunFromOutput(out)
	if err != nil {
		return nil
	}
	next.RunIndex = row.RunIndex
	return next
}
