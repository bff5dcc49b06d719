package queue

import (
	"bytes"
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
	var next *db.Run
	for try := 1; ; try++ {
		var read *db.Run
		next, read = q.requeuedRun(tctx, id)
		if q.requeueRead != nil {
			q.requeueRead(id)
		}
		if next == nil {
			err = q.inTx(tctx, func(tx *sql.Tx) error { return requeue(tctx, tx) })
			break
		}
		// The PENDING row is built from a read taken before the
		// transaction: the transaction reads the row again (locked) and
		// writes only when it is the one read, else it starts over from a
		// new read. Without it, a change committed in between (the run's
		// row written by anything else) was overwritten.
		_, _, err = q.d.SaveRunWith(tctx, nil, next, func(ctx context.Context, tx *sql.Tx) error {
			if err := requeue(ctx, tx); err != nil {
				return err
			}
			return q.runUnchanged(ctx, tx, read)
		})
		if !errors.Is(err, errRunChanged) || try == requeueTries {
			break
		}
	}
	if err = done(err); err != nil {
		return nil, err
	}
	if next == nil {
		q.setRunStatus(ctx, id, run.StatusPending, "", q.jobAtFence(id, attempt, StatusQueued))
	}
	return q.Get(ctx, id, "", false)
}

// requeueTries is how many reads of its run a Requeue makes before it
// gives up on a row that changes under each (errRunChanged).
const requeueTries = 5

// errRunChanged: the run's row changed between Requeue's read and its
// transaction.
var errRunChanged = errors.New("queue: the run changed while it was requeued; retry")

// runUnchanged fails with errRunChanged unless the run's row, read (and
// locked) in tx, is still read, as Requeue read it before its transaction.
func (q *Queue) runUnchanged(ctx context.Context, tx *sql.Tx, read *db.Run) error {
	cur, err := q.d.GetRunTx(ctx, tx, read.RunID)
	switch {
	case errors.Is(err, db.ErrNotFound):
		return errRunChanged
	case err != nil:
		return err
	case cur.Status != read.Status || cur.UpdatedAt != read.UpdatedAt || !bytes.Equal(cur.RunData, read.RunData):
		return errRunChanged
	}
	return nil
}

// requeuedRun is id's run row moved back to PENDING for Requeue's
// transaction, with the row it was built from, or nil when the row is not
// ERROR or CANCELLED (or cannot be read: Requeue then moves it as a second
// write, as moveRun decides).
func (q *Queue) requeuedRun(ctx context.Context, id string) (next, read *db.Run) {
	row, err := q.d.GetRun(ctx, id)
	if err != nil || row.Status != run.StatusError && row.Status != run.StatusCancelled {
		return nil, nil
	}
	out, err := row.Output()
	if err != nil {
		return nil, nil
	}
	out.Status, out.UpdatedAt = run.StatusPending, time.Now().Unix()
	next, err = db.RunFromOutput(out)
	if err != nil {
		return nil, nil
	}
	next.RunIndex = row.RunIndex
	return next, row
}
