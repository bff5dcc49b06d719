package queue

import (
	"context"
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
	row, err := q.d.GetRun(ctx, runID)
	if err != nil {
		q.cfg.Logger.WarnContext(ctx, "queue: read run", "run_id", runID, "err", err)
		return
	}
	switch row.Status {
	case run.StatusCompleted, run.StatusError, run.StatusCancelled, run.StatusRegenerated:
		if status != run.StatusPending || row.Status != run.StatusCancelled && row.Status != run.StatusError {
			return
		}
		// Requeue of a failed or cancelled run: it goes back to PENDING.
	case run.StatusPaused:
		if status == run.StatusRunning || status == run.StatusPending {
			return
		}
	case status:
		return
	}
	out, err := row.Output()
	if err != nil {
		q.cfg.Logger.WarnContext(ctx, "queue: decode run", "run_id", runID, "err", err)
		return
	}
	out.Status = status
	if content != "" {
		out.Content, out.ContentType = content, "str"
	}
	out.UpdatedAt = time.Now().Unix()
	next, err := db.RunFromOutput(out)
	if err == nil {
		_, err = q.d.UpsertRun(ctx, next)
	}
	if err != nil {
		q.cfg.Logger.WarnContext(ctx, "queue: store run status", "run_id", runID, "status", status, "err", err)
	}
}
