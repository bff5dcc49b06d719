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

// setRunStatus moves a run's row to status unless it is finished already
// (COMPLETED, ERROR, CANCELLED; a RUNNING or PENDING move also leaves PAUSED
// alone). content, when set, replaces the run's content (the reason of an
// ERROR or CANCELLED set by the queue). Best effort: logged on failure.
func (q *Queue) setRunStatus(ctx context.Context, runID string, status run.Status, content string, fence db.TxFunc) {
	ctx = context.WithoutCancel(ctx)
	if fence != nil {
		ctx = db.WithWriteFence(ctx, fence)
	}
	var done func(error)
	err := q.moveRun(ctx, runID, status, content, func() {
		if q.runStatusRead != nil {
			done = q.runStatusRead(runID, status)
		}
	})
	if done != nil {
		done(err)
	}
	switch {
	case err == nil, errors.Is(err, errMoveSkipped):
	case errors.Is(err, run.ErrFenced):
		// The job moved on since this move was decided (another attempt
		// claimed it, or finished it): its run row is that attempt's.
		q.cfg.Logger.DebugContext(ctx, "queue: run status move superseded", "run_id", runID, "status", status, "err", err)
	default:
		q.cfg.Logger.WarnContext(ctx, "queue: move run status", "run_id", runID, "status", status, "err", err)
	}
}

// moveRun is setRunStatus's read and write; read is called between them.
func (q *Queue) moveRun(ctx context.Context, runID string, status run.Status, content string, read func()) error {
	row, err := q.d.GetRun(ctx, runID)
	if err != nil {
		return fmt.Errorf("read run: %w", err)
	}
	read()
	switch row.Status {
	case run.StatusCompleted, run.StatusError, run.StatusCancelled, run.StatusRegenerated:
		if status != run.StatusPending || row.Status != run.StatusCancelled && row.Status != run.StatusError {
			return errMoveSkipped
		}
		// Requeue of a failed or cancelled run: it goes back to PENDING.
	case run.StatusPaused:
		if status == run.StatusRunning || status == run.StatusPending {
			return errMoveSkipped
		}
	case status:
		return errMoveSkipped
	}
	out, err := row.Output()
	if err != nil {
		return fmt.Errorf("decode run: %w", err)
	}
	out.Status = status
	if content != "" {
		out.Content, out.ContentType = content, "str"
	}
	out.UpdatedAt = time.Now().Unix()
	next, err := db.RunFromOutput(out)
	if err != nil {
		return err
	}
	_, err = q.d.UpsertRun(ctx, next)
	return err
}

// errMoveSkipped is moveRun's answer when the move writes nothing: the run
// is final, paused, or already in the status.
var errMoveSkipped = errors.New("queue: run status move skipped")

// jobAtFence is the write fence of a run status move that follows a change
// of its job outside any attempt (a requeue, a takeover, a retry): the run
// row is written only while the job row is still at attempt in status. Once
// the job is made available, another worker may claim it (attempt + 1) and
// even finish its run before the move is written; without the fence the
// move's stale read would overwrite that run (a COMPLETED run back to
// PENDING).
func (q *Queue) jobAtFence(id string, attempt int, status string) db.TxFunc {
	return func(ctx context.Context, tx *sql.Tx) error {
		var cur int
		var st string
		err := tx.QueryRowContext(ctx, q.sql(`SELECT attempt, status FROM `+q.jobs+` WHERE id = ?`+q.forUpdate()), id).Scan(&cur, &st)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("%w: job %s is gone", run.ErrFenced, id)
		case err != nil:
			return err
		case cur != attempt || st != status:
			return fmt.Errorf("%w: job %s is %s at attempt %d, the move was for %s at attempt %d", run.ErrFenced, id, st, cur, status, attempt)
		}
		return nil
	}
}
