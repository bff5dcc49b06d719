package queue

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// repairEvery is how often repairLoop looks for runs whose job ended
// without them (repairEndedRuns).
const repairEvery = time.Minute

// endContinuedBatch is how many paused jobs one endContinuedJobs pass
// looks at.
const endContinuedBatch = 200

// repairWindow is how far back, by completed_at, the periodic look goes:
// several periods, so that a look delayed (a loop stalled, a database that
// refused it) still finds what the one before missed. At start the look
// goes back over every job retention keeps.
const repairWindow = 10 * repairEvery

// endedJob is a job row repairEndedRuns looks at.
type endedJob struct {
	id, status, reason string
	attempt            int
	completedAt        int64
}

// repairLoop repairs the runs left behind their ended jobs, and ends the
// paused jobs of runs continued to their end, every repairPeriod. It is a loop of its own: its reads (a run's status per job
// failed in the window) must not delay the lease loop's renewals.
func (q *Queue) repairLoop() {
	defer q.loops.Done()
	t := time.NewTicker(q.repairPeriod)
	defer t.Stop()
	for {
		select {
		case <-q.life.Done():
			return
		case <-t.C:
		}
		ctx := q.life
		if err := q.repairEndedRuns(ctx, time.Now().Add(-repairWindow).Unix()); err != nil && ctx.Err() == nil {
			q.cfg.Logger.WarnContext(ctx, "queue: repair runs left behind their ended jobs", "err", err)
		}
		if err := q.endContinuedJobs(ctx); err != nil && ctx.Err() == nil {
			q.cfg.Logger.WarnContext(ctx, "queue: end the paused jobs of continued runs", "err", err)
		}
	}
}

// repairEndedRuns moves to ERROR (CANCELLED) the runs still PENDING or
// RUNNING whose job ended failed (cancelled) at or after since: the run's
// row follows its job's end in a second write (fail, endUnclaimable, a
// takeover, a cancel of a running job), and a database that took the first
// and refused the second (a write refused once, a connection lost in
// between, a process that died there) left the run PENDING with its job
// failed, which nothing else revisits. It reads the failed and cancelled
// rows only (the exception), and the run status of each in the window
// (the status column, not run_data: db.RunStatusReader).
//
// A job whose run was found with nothing to move (final, or gone) is not
// read again while it stays in the window with the same completed_at: a
// burst of failed runs would otherwise be read again every period of the
// window (ten times). A run moved (or whose move was refused) is read
// again at the next look.
func (q *Queue) repairEndedRuns(ctx context.Context, since int64) error {
	ended, err := q.endedJobs(ctx, `completed_at >= ?`, since)
	if err != nil {
		return err
	}
	fresh := ended[:0]
	for _, j := range ended {
		if at, ok := q.repairSettled[j.id]; !ok || at != j.completedAt {
			fresh = append(fresh, j)
		}
	}
	settled, err := q.repairRuns(ctx, fresh)
	for id, at := range q.repairSettled {
		if at < since {
			delete(q.repairSettled, id)
		}
	}
	for _, j := range settled {
		q.repairSettled[j.id] = j.completedAt
	}
	return err
}

// repairLiveRuns is repairEndedRuns at start, for every job retention
// keeps: it reads the runs still PENDING or RUNNING (a bounded set: the
// queued and executing ones) and the failed or cancelled jobs among
// theirs, instead of a run status per failed job of the retention period. Both
// reads take the runs' ids and statuses only, never run_data.
func (q *Queue) repairLiveRuns(ctx context.Context) error {
	const chunk = 200
	return q.eachLiveRunPage(ctx, func(ids []any) error {
		var ended []endedJob
		for len(ids) > 0 {
			n := min(len(ids), chunk)
			part, err := q.endedJobs(ctx, `id IN (`+placeholders(n)+`)`, ids[:n]...)
			if err != nil {
				return err
			}
			ended, ids = append(ended, part...), ids[n:]
		}
		_, err := q.repairRuns(ctx, ended)
		return err
	})
}

// liveRunPage is how many live run ids eachLiveRunPage reads at once.
const liveRunPage = 500

// eachLiveRunPage calls fn with the ids of the runs still PENDING or
// RUNNING, a page at a time, in run id order, read from the runs' status
// column only: their run_data (a run's whole transcript) is not read, and a
// run whose run_data cannot be decoded is listed like any other (a page of
// full rows failed on it, and the repair with it). A page at a time: a
// database carried over from 2.x can hold many runs its crashed processes
// left RUNNING. fn may end the runs of its page (the next page starts after
// its last id).
func (q *Queue) eachLiveRunPage(ctx context.Context, fn func(ids []any) error) error {
	after := ""
	for {
		page, err := q.d.RunIDsInStatus(ctx, []run.Status{run.StatusRunning, run.StatusPending}, after, liveRunPage)
		if err != nil {
			return err
		}
		if len(page) == 0 {
			return nil
		}
		ids := make([]any, len(page))
		for i, id := range page {
			ids[i] = id
		}
		if err := fn(ids); err != nil {
			return err
		}
		if len(page) < liveRunPage {
			return nil
		}
		after = page[len(page)-1]
	}
}

// endedJobs reads the failed and cancelled jobs where cond holds.
func (q *Queue) endedJobs(ctx context.Context, cond string, args ...any) ([]endedJob, error) {
	var ended []endedJob
	err := q.bounded(ctx, func(ctx context.Context) error {
		rows, err := q.w.QueryContext(ctx, q.sql(`SELECT id, status, attempt, error, COALESCE(completed_at, 0) FROM `+q.jobs+` WHERE status IN (?, ?) AND `+cond),
			append([]any{StatusFailed, StatusCancelled}, args...)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var j endedJob
			var reason sql.NullString
			if err := rows.Scan(&j.id, &j.status, &j.attempt, &reason, &j.completedAt); err != nil {
				return err
			}
			j.reason = reason.String
			ended = append(ended, j)
		}
		return rows.Err()
	})
	return ended, err
}

// repairRuns moves the run of each ended job that is still PENDING or
// RUNNING to its job's end, with its job's reason. Each move is fenced on
// the job row being still in that status at that attempt (jobAtFence), so
// replicas repairing together write once, and a requeue (the job queued
// again) or a session delete (the job gone) wins over it; a run already
// final is left alone. settled are the jobs whose run needed no move (final
// or gone).
func (q *Queue) repairRuns(ctx context.Context, ended []endedJob) (settled []endedJob, err error) {
	for len(ended) > 0 {
		part := ended[:min(len(ended), statusChunk)]
		ended = ended[len(part):]
		ids := make([]string, len(part))
		for i, j := range part {
			if q.repairRead != nil {
				q.repairRead(j.id)
			}
			ids[i] = j.id
		}
		statuses, err := q.runStatuses(ctx, ids)
		if err != nil {
			return settled, err
		}
		for _, j := range part {
			if ctx.Err() != nil {
				return settled, ctx.Err()
			}
			if st, ok := statuses[j.id]; !ok || st != run.StatusPending && st != run.StatusRunning {
				settled = append(settled, j) // gone, or final
				continue
			}
			status, content := run.StatusError, j.reason
			if j.status == StatusCancelled {
				status, content = run.StatusCancelled, "run "+j.id+" was cancelled"
				if j.reason != "" {
					content = "run " + j.id + " was " + j.reason
				}
			}
			q.cfg.Logger.WarnContext(ctx, "queue: run left behind its ended job; moved", "run_id", j.id, "job_status", j.status, "run_status", status)
			q.setRunStatus(ctx, j.id, status, content, q.jobAtFence(j.id, j.attempt, j.status))
		}
	}
	return settled, nil
}

// statusChunk is how many runs' statuses one read of the repair asks for.
const statusChunk = 200

// runStatuses reads the statuses of the runs ids, not their run_data (see
// db.RunStatusReader); a run missing from the answer is gone. A driver
// without the ability reads whole rows, and leaves out those it could not
// decode: such a run cannot be moved anyway.
func (q *Queue) runStatuses(ctx context.Context, ids []string) (map[string]run.Status, error) {
	statuses, err := q.d.RunStatuses(ctx, ids)
	if err != nil && !errors.Is(err, db.ErrCorruptRow) {
		return nil, err
	}
	return statuses, nil
}

// endContinuedJobs records the end of each paused job whose run ended
// since it paused: a paused run is continued outside the queue (its
// continue or approval route runs it in the request), which writes the run
// row only, so that its job stayed paused for good, listed and counted as
// paused, its journal kept, and never deleted by retention (which keeps
// paused jobs). The job takes its run's end (completed, failed, cancelled)
// and its journal is cleared, in one transaction conditional on the row
// still being paused at its attempt.
//
// A pass looks at pausedBatch paused jobs, in id order after the last one
// the pass before looked at, and starts again from the first after the
// last batch: runs waiting for an approval can be many and stay paused for
// days, and each costs a read of its run's status, so a process reads at
// most pausedBatch run statuses a period (a continued run's job ends within
// ⌈paused jobs ÷ pausedBatch⌉ periods).
func (q *Queue) endContinuedJobs(ctx context.Context) error {
	var paused []endedJob
	err := q.bounded(ctx, func(ctx context.Context) error {
		rows, err := q.w.QueryContext(ctx, q.sql(`SELECT id, attempt FROM `+q.jobs+` WHERE status = ? AND id > ? ORDER BY id LIMIT ?`),
			StatusPaused, q.pausedAfter, q.pausedBatch)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			j := endedJob{status: StatusPaused}
			if err := rows.Scan(&j.id, &j.attempt); err != nil {
				return err
			}
			paused = append(paused, j)
		}
		return rows.Err()
	})
	if err != nil {
		return err
	}
	q.pausedAfter = ""
	if len(paused) == q.pausedBatch {
		q.pausedAfter = paused[len(paused)-1].id
	}
	ids := make([]string, len(paused))
	for i, j := range paused {
		ids[i] = j.id
	}
	statuses, err := q.runStatuses(ctx, ids)
	if err != nil {
		return err
	}
	for _, j := range paused {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch st := statuses[j.id]; st {
		case run.StatusCompleted, run.StatusError, run.StatusCancelled:
			if err := q.endPaused(ctx, j, jobStatusOf(st)); err != nil {
				return err
			}
		}
	}
	return nil
}

// endPaused ends j, paused, as status, clearing its run's journal.
func (q *Queue) endPaused(ctx context.Context, j endedJob, status string) error {
	now := unixNow()
	var clear db.TxFunc
	if q.journal != nil {
		clear = q.journal.ClearTx(q.d, j.id)
	}
	ended := false
	endTx := func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q.sql(`UPDATE `+q.jobs+` SET status = ?, locked_by = NULL, locked_at = NULL, updated_at = ?, completed_at = ?
WHERE id = ? AND status = ? AND attempt = ?`), status, now, now, j.id, StatusPaused, j.attempt)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 1 {
			return err
		}
		ended = true
		if clear != nil {
			return clear(ctx, tx)
		}
		return nil
	}
	err := q.boundedTx(ctx, endTx)
	if err != nil {
		return err
	}
	if ended && clear == nil {
		q.clearJournal(ctx, j.id)
	}
	return nil
}
