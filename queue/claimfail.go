package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// minClaimTries is the fewest failed claims of a job that end its run
// (claimTries): a job with one attempt left must not end on one transient
// error of the claim (a deadlock, a busy writer).
const minClaimTries = 3

// claimTries is how many failed claims of a River job end its run: as
// many as the job has attempts left (max_attempts counted from this one),
// at least minClaimTries. A failed claim runs no attempt and spends none
// of River's (Work snoozes the job), so without a bound a claim that fails
// for good (a trigger or a constraint refusing the claim's update, a
// corrupt row) kept the run queued and PENDING forever; a failed claim is
// now counted against the attempts the run has left, as a failed attempt
// is, with the retry delay between two tries.
func claimTries(rj *river.Job[runArgs]) int {
	return max(rj.MaxAttempts-rj.Attempt+1, minClaimTries)
}

// claimFailed is Work's answer to a claim of rj that failed with err.
// The failure is counted for rj's engine job unless it is the database's
// being unreachable or the worker's context ending (neither says anything
// of the claim). Below claimTries, or when the database does not take the
// write that ends the run (it is down: a transient outage fails no run),
// the job is snoozed for the retry delay and comes back; past it the run
// ends as ERROR with the claim's error as its reason (endUnclaimable) and
// the River job is cancelled.
//
// The count is this process's, in memory (q.claimFails): a restart or
// another replica counts again from zero, which delays the end by at most
// claimTries tries per process that fetches the job, and costs no write
// per failure on a database that may be refusing writes
// (docs/adr/queue-claim-failure-bound.md).
func (q *Queue) claimFailed(ctx context.Context, rj *river.Job[runArgs], err error) error {
	id, attempt, engine := rj.Args.RunID, rj.Attempt, rj.ID
	delay := q.retryDelay(rj.Args)
	if ctx.Err() != nil || errors.Is(db.MarkUnavailable(err), db.ErrUnavailable) {
		q.cfg.Logger.WarnContext(ctx, "queue: claim failed, the database is unavailable; the job comes back after the retry delay", "run_id", id, "attempt", attempt, "err", err)
		return river.JobSnooze(delay)
	}
	n, tries := q.countClaimFailure(engine, delay), claimTries(rj)
	if n < tries {
		q.cfg.Logger.WarnContext(ctx, "queue: claim failed; the job comes back after the retry delay", "run_id", id, "attempt", attempt, "failures", n, "of", tries, "err", err)
		return river.JobSnooze(delay)
	}
	reason := fmt.Sprintf("the run could not be claimed (%d tries): %v", n, err)
	ended, ferr := q.endUnclaimable(context.WithoutCancel(ctx), id, attempt, engine, reason)
	switch {
	case ferr != nil:
		q.cfg.Logger.WarnContext(ctx, "queue: claim failed and the run could not be ended; the job comes back after the retry delay", "run_id", id, "attempt", attempt, "err", err, "end_err", ferr)
		return river.JobSnooze(delay)
	case ended:
		q.forgetClaimFailures(engine)
		q.cfg.Logger.ErrorContext(ctx, "queue: run failed: its job could not be claimed", "run_id", id, "attempt", attempt, "err", err)
		return river.JobCancel(errors.New(reason))
	case q.jobDeleted(context.WithoutCancel(ctx), id, engine):
		q.forgetClaimFailures(engine)
		return river.JobCancel(fmt.Errorf("job %s is gone", id))
	}
	// The row is not one a claim could take (a live lease of an older
	// attempt, a cancel asked): the claim, when it works, says what to do.
	q.cfg.Logger.WarnContext(ctx, "queue: claim failed; the job comes back after the retry delay", "run_id", id, "attempt", attempt, "failures", n, "err", err)
	return river.JobSnooze(delay)
}

// claimFailKeep is how long a failed claim's count is kept past the
// job's retry delay (the snooze after which it comes back): a job that was
// cancelled, deleted, ended or fetched by another process since never
// comes back here to be forgotten (forgetClaimFailures), and its count
// would stay for the life of the process. A job that comes back later
// (a backlog longer than that) counts again from zero, as after a restart.
const claimFailKeep = 10 * time.Minute

// claimFailCount is the count of one River job's failed claims.
type claimFailCount struct {
	n int
	// keepUntil is when the count is dropped unless the job fails again.
	keepUntil time.Time
}

// countClaimFailure counts a failed claim of engine's job, snoozed for
// delay, and returns the count.
func (q *Queue) countClaimFailure(engine int64, delay time.Duration) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.claimFails == nil {
		q.claimFails = map[int64]claimFailCount{}
	}
	now := time.Now()
	q.dropClaimFailures(now)
	c := q.claimFails[engine]
	c.n++
	c.keepUntil = now.Add(delay + q.claimFailKeep)
	q.claimFails[engine] = c
	q.claimFailing.Store(int64(len(q.claimFails)))
	return c.n
}

// pruneClaimFailures drops the counts kept past their time (the lease
// loop calls it at every tick): failures that stopped leave none behind.
func (q *Queue) pruneClaimFailures(now time.Time) {
	if q.claimFailing.Load() == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.dropClaimFailures(now)
	q.claimFailing.Store(int64(len(q.claimFails)))
}

// dropClaimFailures drops the counts kept past their time; q.mu is held.
func (q *Queue) dropClaimFailures(now time.Time) {
	for engine, c := range q.claimFails {
		if now.After(c.keepUntil) {
			delete(q.claimFails, engine)
		}
	}
}

// forgetClaimFailures drops engine's count: its claim worked, or its run
// ended. It is called after every claim that worked, nearly always with no
// count recorded at all: that case reads claimFailing and takes no lock
// (q.mu is the lock of every claim, hold and release). A count of engine's
// was stored (under q.mu) by an earlier Work of the same job, which
// happened before this one (River hands the job to the next Work after the
// last returned): the load sees it.
func (q *Queue) forgetClaimFailures(engine int64) {
	if q.claimFailing.Load() == 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.claimFails, engine)
	q.claimFailing.Store(int64(len(q.claimFails)))
}

// endUnclaimable ends as failed, with reason, the job row a claim of
// attempt of engine's job would have taken (claimSQL's rows, due or not),
// and its run as ERROR; ended false when there is no such row. The job's
// outcome and the journal's deletion are one transaction, as finish's.
func (q *Queue) endUnclaimable(ctx context.Context, id string, attempt int, engine int64, reason string) (ended bool, err error) {
	now := unixNow()
	var clear db.TxFunc
	if q.journal != nil {
		clear = q.journal.ClearTx(q.d, id)
	}
	rowAttempt := 0
	err = q.inTx(ctx, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, q.sql(`UPDATE `+q.jobs+` SET status = ?, error = ?, locked_by = NULL, locked_at = NULL, updated_at = ?, completed_at = ?
WHERE id = ? AND `+engineCol+` = ? AND attempt < ? AND cancel_requested_at IS NULL AND (status = ? OR (status = ? AND (locked_at IS NULL OR locked_at < ?)))
RETURNING attempt`), StatusFailed, reason, now, now, id, engine, attempt, StatusQueued, StatusRunning, now-q.graceSeconds()).Scan(&rowAttempt)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		ended = true
		if clear != nil {
			return clear(ctx, tx)
		}
		return nil
	})
	if err != nil || !ended {
		return false, err
	}
	if clear == nil {
		q.clearJournal(ctx, id)
	}
	q.setRunStatus(ctx, id, run.StatusError, reason, q.jobAtFence(id, rowAttempt, StatusFailed))
	return true, nil
}
