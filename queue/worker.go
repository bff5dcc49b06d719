package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/riverqueue/river"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sessionline"
	"github.com/agentryhq/agentry/run"
)

// worker is River's worker of background runs.
type worker struct {
	river.WorkerDefaults[runArgs]
	q *Queue
}

// NextRetry waits the job's retry delay before a failed attempt is retried.
func (w *worker) NextRetry(rj *river.Job[runArgs]) time.Time {
	return time.Now().Add(w.q.retryDelay(rj.Args))
}

// Work claims the job's lease for River's attempt (the fencing token), runs
// the handler and records the outcome, fenced on the attempt.
func (w *worker) Work(ctx context.Context, rj *river.Job[runArgs]) error {
	q := w.q
	attempt, engine := rj.Attempt, rj.ID
	if q.beforeClaim != nil {
		q.beforeClaim(rj.Args.RunID, attempt)
	}
	j, claimed, err := q.claim(ctx, rj.Args.RunID, attempt, engine)
	if err != nil {
		// A claim that failed ran no attempt. As River's error it would
		// spend an engine attempt all the same (the run would get one retry
		// fewer) and, at the job's last, River would discard the job,
		// leaving the run's row queued with nothing to dispatch it. The job
		// is snoozed instead, and a claim that keeps failing ends the run
		// (claimFailed).
		return q.claimFailed(ctx, rj, err)
	}
	q.forgetClaimFailures(engine)
	if !claimed && j != nil && j.engineID != engine {
		// The row is another engine job's: this one was left behind by a
		// deleted session (queued or waiting for a retry when the session
		// went) and the run id was enqueued again. It has nothing to run,
		// now or later.
		return river.JobCancel(fmt.Errorf("job %s belongs to engine job %d, not %d: this one was left behind by a deleted run", rj.Args.RunID, j.engineID, engine))
	}
	// A claimed row is at the claim's attempt, which may be older than
	// River's (see claim): the waits below are for rows a claim refused.
	if wait := q.leaseLive(j, attempt); !claimed && wait > 0 {
		// An older attempt still holds a live lease (River rescued a run
		// that overran its timeout while its worker lives and renews): a
		// slow-but-alive run is never taken over. The job comes back when
		// that lease could have expired; if its holder died by then, the
		// lease sweep has requeued the run.
		return river.JobSnooze(wait)
	}
	if wait := notDue(j, attempt); !claimed && wait > 0 {
		// The run is queued for a retry that is not due yet: River
		// dispatched its job sooner than the retry delay (a job snoozed
		// by a live lease comes back when its snooze ends, and River did
		// not record the failed attempt's retry on a job that was no
		// longer running). It comes back when the row is due.
		return river.JobSnooze(wait)
	}
	if !claimed {
		if j.endedAs(engine, StatusCompleted, StatusPaused) {
			// This engine job's run ended while the job was snoozed (a
			// claim refused by the live lease of the attempt River had
			// re-dispatched it from): that attempt's own end was not
			// recorded on the engine job, which was no longer running.
			// It ends as its worker would have ended it, not cancelled
			// against what agno_jobs says.
			return nil
		}
		// Cancelled, failed, taken over or gone: nothing to run.
		return river.JobCancel(fmt.Errorf("job %s is not runnable (%s)", rj.Args.RunID, j.statusOr("missing")))
	}
	// The attempt claimed is the run's (the row's next); River's may be
	// ahead of it (see claim).
	attempt = j.Attempt
	if st := j.runFinal; st != "" {
		// The run's row ended before its job could record it (the process
		// died in between): it is not executed again; its job records it.
		js := jobStatusOf(st)
		q.finish(context.WithoutCancel(ctx), j.ID, attempt, engine, js, finalBeforeJob(st))
		if js == StatusCancelled {
			return river.JobCancel(ErrCancelled)
		}
		return nil
	}
	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stopLife := context.AfterFunc(q.life, func() { cancel(context.Cause(q.life)) })
	defer stopLife()
	h := q.hold(j.ID, attempt, engine, rctx, cancel)
	defer q.release(j.ID, h)
	rctx = q.fenced(rctx, j.ID, attempt, engine)
	if j.freshJournal {
		rctx = db.WithFreshJournal(rctx, j.ID, attempt)
	}
	if j.runIndex != nil {
		// The run's saves keep the row's run_index: Postgres takes no
		// session lock to assign one.
		rctx = db.WithRunIndex(rctx, j.ID, *j.runIndex)
	}
	// The run's first load of its session takes the row the claim read
	// (none when the claim did not read it), unless a run of the session
	// wrote it here since the claim's mark (internal/sessionline).
	rctx = db.WithClaimedSessionAt(rctx, j.ID, j.session, j.sessionMark)

	status, herr := q.safeHandle(rctx, &j.Job)
	cause := context.Cause(rctx)
	fctx := context.WithoutCancel(ctx)
	if fin := q.finishedHere(j.ID, attempt, engine); fin != "" {
		// The run's final save recorded the job's outcome in its own
		// transaction: nothing is left to record. When the handler failed
		// after that save, the row says whether the save committed.
		done := herr == nil && fin == jobStatusOf(status)
		if !done {
			_, done = q.recordedOutcome(fctx, j.ID, attempt, engine)
		}
		if done {
			if fin == StatusCancelled {
				q.cfg.Logger.InfoContext(fctx, "queue: run cancelled", "run_id", j.ID, "attempt", attempt)
				return river.JobCancel(ErrCancelled)
			}
			return nil
		}
	}
	switch {
	case errors.Is(cause, errStopped):
		// Left running: a restarted node resumes it, another takes it over.
		return herr
	case errors.Is(cause, errJobDeleted) || errors.Is(herr, errJobDeleted):
		// The job row was deleted (its session was): the run is stopped on
		// purpose and there is nothing left to record, but a step it had
		// under way may have been journaled after the delete.
		q.endDeleted(fctx, j.ID, attempt)
		return nil
	case errors.Is(cause, run.ErrFenced) || errors.Is(herr, run.ErrFenced):
		// A newer attempt owns the run: record nothing.
		why := cause
		if !errors.Is(why, run.ErrFenced) {
			why = herr
		}
		q.cfg.Logger.WarnContext(fctx, "queue: superseded attempt stopped", "run_id", j.ID, "attempt", attempt, "err", why)
		return nil
	case herr == nil:
		if !q.finish(fctx, j.ID, attempt, engine, jobStatusOf(status), "") && q.jobDeleted(fctx, j.ID, engine) {
			q.endDeleted(fctx, j.ID, attempt)
			return nil
		}
		if status == run.StatusCancelled {
			q.cfg.Logger.InfoContext(fctx, "queue: run cancelled", "run_id", j.ID, "attempt", attempt)
			return river.JobCancel(ErrCancelled)
		}
		return nil
	case errors.Is(cause, ErrCancelled):
		if !q.finishCancelled(fctx, j.Job, attempt, engine, "cancelled") && q.jobDeleted(fctx, j.ID, engine) {
			q.endDeleted(fctx, j.ID, attempt)
			return nil
		}
		q.cfg.Logger.InfoContext(fctx, "queue: run cancelled", "run_id", j.ID, "attempt", attempt)
		return river.JobCancel(ErrCancelled)
	}
	var perm *permanentError
	if errors.As(herr, &perm) || attempt >= j.MaxAttempts {
		reason := fmt.Sprintf("attempt %d of %d failed: %v", attempt, j.MaxAttempts, herr)
		if !q.fail(fctx, j.Job, attempt, engine, reason) && q.jobDeleted(fctx, j.ID, engine) {
			q.endDeleted(fctx, j.ID, attempt)
			return nil
		}
		return river.JobCancel(herr)
	}
	// The handler may fail before the heartbeat saw the job row deleted:
	// a deleted job's attempt ends without a retry (there is no row to
	// retry) and without leaving its journal behind.
	if requeued, err := q.retryLater(fctx, j.ID, attempt, engine, q.retryDelay(rj.Args), herr.Error()); err == nil && !requeued && q.jobDeleted(fctx, j.ID, engine) {
		q.endDeleted(fctx, j.ID, attempt)
		return nil
	}
	if rj.Attempt >= rj.MaxAttempts {
		// River's attempt is ahead of the run's (see claim) and at its
		// last: as an error River would discard the job, the run queued
		// with nothing to dispatch it. A snooze brings it back after the
		// retry delay without spending River's attempt, and the claim then
		// takes the run's next one.
		q.cfg.Logger.WarnContext(fctx, "queue: attempt failed; retried", "run_id", j.ID, "attempt", attempt, "err", herr)
		return river.JobSnooze(q.retryDelay(rj.Args))
	}
	return herr
}

// finalBeforeJob is the job's reason when the claim found its run ended
// already (status st) and the job records that end: without one a failed
// or cancelled job said nothing of why it ended without running.
func finalBeforeJob(st run.Status) string {
	if st == run.StatusCompleted {
		return ""
	}
	return fmt.Sprintf("the run was %s before its job recorded it (an attempt ended it and stopped before recording its job, or it was ended outside the queue); it was not run again", st)
}

// endDeleted ends an attempt whose job row was deleted (with its session)
// while it ran: the run is stopped on purpose and there is nothing left to
// record, but a step it had under way may have been journaled after the
// delete.
func (q *Queue) endDeleted(ctx context.Context, id string, attempt int) {
	q.cfg.Logger.InfoContext(ctx, "queue: job deleted, its run stopped", "run_id", id, "attempt", attempt)
	q.clearDeletedJournal(ctx, id)
}

// jobDeleted reports whether the job row that engine's attempts hold is
// gone: deleted with its session, or replaced by a new enqueue of the same
// run id (a repeated Idempotency-Key after the delete), whose engine job
// is another. False when the row cannot be read.
func (q *Queue) jobDeleted(ctx context.Context, id string, engine int64) bool {
	var cur int64
	err := q.w.QueryRowContext(ctx, q.sql(`SELECT `+engineCol+` FROM `+q.jobs+` WHERE id = ?`), id).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) {
		return true
	}
	return err == nil && cur != engine
}

// engineCol is a job row's engine job id, 0 for a row without one (a
// foreground run's lease, a test's claim). With the attempt it is the
// fencing token of an attempt: a run id enqueued again after its session
// was deleted (a repeated Idempotency-Key names the same run id) starts
// again at attempt 1, under another engine job.
const engineCol = `COALESCE(engine_job_id, 0)`

// leaseLive is how long to wait before the claim of attempt, refused, may
// be tried again: positive when j (the row the claim found) is running at
// an older attempt whose lease is live, 0 otherwise.
func (q *Queue) leaseLive(j *claimedJob, attempt int) time.Duration {
	if j == nil || j.Status != StatusRunning || j.Attempt >= attempt || j.LockedBy == "" {
		return 0
	}
	wait := time.Until(q.leaseExpiry(j.LockedAt))
	if wait <= 0 {
		return 0
	}
	// Past the expiry by a renewal period: the sweep has had its chance.
	return wait + q.renewEvery()
}

// leaseExpiry is the first moment the claim (claimSQL) takes over a running
// row locked at lockedAt: locked_at < now - LockGrace, in the whole seconds
// the rows count. leaseLive waits for it: a wait that ended a second
// sooner found the claim still refusing the row and cancelled its job.
func (q *Queue) leaseExpiry(lockedAt int64) time.Time {
	return time.Unix(lockedAt+q.graceSeconds()+1, 0)
}

// graceSeconds is LockGrace in whole seconds, as the claim compares it.
func (q *Queue) graceSeconds() int64 { return int64(q.cfg.LockGrace / time.Second) }

// notDue is how long to wait before the claim of attempt, refused, may be
// tried again: positive when j (the row the claim found) is queued at an
// older attempt, with no cancel asked, and its available_at is ahead (a
// failed attempt's retry delay); 0 otherwise. The claim compares
// available_at with the second it ran in: a row that became due since is
// tried again at once (minDueWait).
func notDue(j *claimedJob, attempt int) time.Duration {
	if j == nil || j.Status != StatusQueued || j.Attempt >= attempt || j.CancelRequested {
		return 0
	}
	return max(time.Until(time.Unix(j.AvailableAt, 0)), minDueWait)
}

// minDueWait is notDue's shortest wait.
const minDueWait = 10 * time.Millisecond

// errEnqueuedAgain rolls back clearDeletedJournal's deletion.
var errEnqueuedAgain = errors.New("queue: the run was enqueued again")

// clearDeletedJournal deletes the step journal of a run whose job row was
// deleted (with its session) while an attempt ran. The session delete took
// the journal, but a step the attempt had under way can be recorded after
// it (its write raises the journal's fence again, as a first write does),
// and no run, job or session would be left to delete it with. The deletion
// is rolled back when a job row for the run id exists at its end: the run
// was enqueued anew (a repeated Idempotency-Key names the same run id), and
// any step the deletion saw committed is the new run's, whose enqueue
// committed before it.
func (q *Queue) clearDeletedJournal(ctx context.Context, id string) {
	if q.journal == nil {
		return
	}
	clear := q.journal.ClearTx(q.d, id)
	if clear == nil {
		return
	}
	err := q.inTx(ctx, func(tx *sql.Tx) error {
		if err := clear(ctx, tx); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRowContext(ctx, q.sql(`SELECT COUNT(*) FROM `+q.jobs+` WHERE id = ?`), id).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return errEnqueuedAgain
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnqueuedAgain) {
		q.cfg.Logger.WarnContext(ctx, "queue: clear the step journal of a deleted run", "run_id", id, "err", err)
	}
}

// safeHandle runs the handler; a panic is an error of the attempt.
func (q *Queue) safeHandle(ctx context.Context, j *Job) (st run.Status, err error) {
	defer func() {
		if v := recover(); v != nil {
			q.cfg.Logger.ErrorContext(ctx, "queue: panic in background run", "run_id", j.ID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("the run panicked: %v", v)
		}
	}()
	return q.handler(ctx, j)
}

// hold notes that this process executes attempt of id's job (engine's).
// An attempt of the run this process still holds is stopped at once: its
// job was deleted and the run id enqueued again (engine differs), or a
// newer attempt was claimed; its writes are fenced out from the claim's
// commit, and its context ends now rather than at the next heartbeat. It
// leaves q.running (heartbeats, cancels and the outcome's bookkeeping are
// the new attempt's) but is still counted as executing (q.winding) until
// its worker returns and releases it.
func (q *Queue) hold(id string, attempt int, engine int64, ctx context.Context, cancel context.CancelCauseFunc) *holding {
	q.mu.Lock()
	defer q.mu.Unlock()
	if old := q.running[id]; old != nil && !old.foreground {
		if old.engine != engine {
			old.cancel(jobGone(id))
		} else {
			old.cancel(fmt.Errorf("%w: run %s was claimed by attempt %d", run.ErrFenced, id, attempt))
		}
		old.replaced = true
		q.winding++
	}
	h := &holding{attempt: attempt, engine: engine, ctx: ctx, cancel: cancel}
	q.running[id] = h
	q.peak = max(q.peak, q.dispatched())
	return h
}

// holds reports whether h is the holding of attempt of engine's job.
func (h *holding) holds(attempt int, engine int64) bool {
	return h != nil && h.attempt == attempt && h.engine == engine
}

// stoppedHere says this process's stop cut the dispatched attempt short
// (its context's first cause), not a cancel, a takeover or the run itself.
func (q *Queue) stoppedHere(id string, attempt int, engine int64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	h := q.running[id]
	return h.holds(attempt, engine) && !h.foreground && h.ctx != nil && errors.Is(context.Cause(h.ctx), errStopped)
}

// release notes that h, id's holding, has ended: its worker returned (a
// dispatched job) or its run ended (a foreground lease).
func (q *Queue) release(id string, h *holding) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.running[id] == h:
		delete(q.running, id)
	case h.replaced:
		// A newer holding of the run replaced it (hold): it was counted
		// until now.
		h.replaced = false
		q.winding--
	}
}

// claimedJob is a job row with the cancel flag.
type claimedJob struct {
	Job
	CancelRequested bool
	engineID        int64
	// runFinal is the status of the run's row when the claim found it
	// final (COMPLETED, ERROR, CANCELLED); "" when it is to be executed.
	runFinal run.Status
	// freshJournal: the claim's transaction found the run's journal empty
	// (db.WithFreshJournal).
	freshJournal bool
	// runIndex is the run row's run_index the claim saw (nil: unknown).
	runIndex *int64
	// session is the run's session row as the claim read it (nil: not
	// read; db.WithClaimedSession); sessionMark is the process's session
	// lines' mark taken before that read (sessionline.Registry.Mark).
	session     *db.Session
	sessionMark uint64
}

// endedAs reports whether c is the row of engine's job, final in one of
// statuses (its outcome recorded by an attempt of that engine job).
func (c *claimedJob) endedAs(engine int64, statuses ...string) bool {
	if c == nil || c.engineID != engine || c.LockedBy != "" {
		return false
	}
	for _, st := range statuses {
		if c.Status == st {
			return true
		}
	}
	return false
}

func (c *claimedJob) statusOr(def string) string {
	if c == nil || c.Status == "" {
		return def
	}
	return c.Status
}

// claim takes the job's lease for River's attempt of engineID's job:
// status running, locked_by this node. A job that is not queued or running
// (cancelled, finished, failed) is not claimed; neither is one whose row
// holds attempt or a newer one. The run's row moves to RUNNING in the same
// transaction (one commit per claim).
//
// The attempt claimed (the returned row's, the fencing token's) is the
// row's next: River's attempt when the two are in step, the common case the
// piped form and the first statement try. River's attempt can be ahead of
// the row's when River spent an attempt that ran nothing (a failed
// attempt's end landed on River while a snoozed fetch of the job held it,
// so that the fetch's snooze was dropped; a process died between River's
// fetch and the claim): the transaction then claims the row's next attempt,
// and the run keeps every attempt max_attempts allows (see Work for
// River's side).
func (q *Queue) claim(ctx context.Context, id string, attempt int, engineID int64) (*claimedJob, bool, error) {
	got, ok, tried := q.claimPiped(ctx, id, attempt, engineID)
	if ok {
		return got, true, nil
	}
	got = nil
	claimed, fresh := false, false
	with := func(ctx context.Context, tx *sql.Tx) error {
		got, claimed, fresh = nil, false, false // the piped form may have run first
		// The lease is stamped with the time the transaction runs, not the
		// time the claim began to wait for it (SQLite's writer is shared by
		// a group of writes): see renew.
		now := unixNow()
		// One statement checks and claims the row (one round trip on
		// Postgres).
		cq, cargs := q.claimSQL(id, attempt, engineID, now)
		j, err := q.scanJob(tx.QueryRowContext(ctx, cq, cargs...), true)
		if errors.Is(err, sql.ErrNoRows) {
			// Not in step with River: the row (if any) says why, or which
			// attempt is its next.
			if j, err = q.scanJob(tx.QueryRowContext(ctx, q.sql(`SELECT `+jobColumns+`, cancel_requested_at FROM `+q.jobs+` WHERE id = ?`), id), true); err == nil {
				got = j
				switch next := j.Attempt + 1; {
				case q.ownOrphan(j, attempt, engineID):
					aq, aargs := q.adoptSQL(id, j.Attempt, engineID, now)
					j, err = q.scanJob(tx.QueryRowContext(ctx, aq, aargs...), true)
				case next < attempt:
					cq, cargs := q.claimSQL(id, next, engineID, now)
					j, err = q.scanJob(tx.QueryRowContext(ctx, cq, cargs...), true)
				default:
					err = sql.ErrNoRows
				}
			}
			if errors.Is(err, sql.ErrNoRows) {
				return errNotClaimed
			}
		}
		if err == nil {
			// From the second attempt on (raisesFence), the run's journal
			// fence is raised to this attempt in the claim's transaction,
			// so that the run's own claim (Journal.Fence) is a read and
			// older attempts' journal writes fail from the commit on. It
			// is raised after the job row is locked, the order of the
			// final save (the job's outcome, then the journal's deletion),
			// of finish and of a session delete: a claim meeting any of
			// them on the same run waits instead of deadlocking.
			if q.raisesFence(j.Attempt) {
				if f := q.journal.TxFence(q.d, id, j.Attempt); f != nil {
					if err := f(ctx, tx); errors.Is(err, run.ErrFenced) {
						return errNotClaimed
					} else if err != nil {
						return err
					}
				}
			}
			got, claimed = j, true
			return q.lookAtJournal(ctx, tx, id, func() { fresh = true })
		}
		return err
	}
	// The claim's piped form (Postgres): the job's claim, the journal's
	// fence and the RUNNING row sent in one round trip with BEGIN. When
	// the job is not claimable there, the write is rolled back and with
	// runs in a transaction of its own to say why.
	piped := func(ctx context.Context) ([]db.PipedStmt, bool) {
		cq, cargs := q.claimSQL(id, attempt, engineID, unixNow())
		fresh = false
		// The job row first, then the journal's fence (as with).
		stmts := []db.PipedStmt{{Query: cq, Args: cargs, Row: func(sc interface{ Scan(...any) error }) error {
			j, err := q.scanJob(sc, true)
			if errors.Is(err, sql.ErrNoRows) {
				return errNotClaimed
			}
			if err == nil {
				got, claimed = j, true
			}
			return err
		}}}
		if q.raisesFence(attempt) {
			if pf := q.journal.PipedFence(q.d, id, attempt); pf != nil {
				fs, ok := pf(ctx)
				if !ok {
					return nil, false
				}
				stmts = append(stmts, fs...)
			} else if q.journal.TxFence(q.d, id, attempt) != nil {
				return nil, false
			}
		}
		if q.journal != nil {
			// Whether the journal is empty (a first attempt's): the run's
			// first journal reads are then answered from the claim's
			// snapshot (db.WithFreshJournal), two round trips fewer.
			if st, ok := q.journal.EmptyStmt(q.d, id, func() { fresh = true }); ok {
				stmts = append(stmts, st)
			}
		}
		return stmts, true
	}
	if tried {
		// The piped claim failed: it is not the common case, which the
		// transaction below decides without trying a pipeline again.
		piped = nil
	}
	var err error
	running, final := q.runningRow(ctx, id)
	if running != nil {
		_, _, err = q.d.SaveRunWith(db.WithLockKey(db.WithPipedWriteFence(ctx, with, piped), id), nil, running, nil)
	} else {
		err = q.inTx(ctx, func(tx *sql.Tx) error { return with(ctx, tx) })
	}
	if errors.Is(err, errNotClaimed) {
		return got, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	got.runFinal = final
	got.freshJournal = fresh && claimed
	if running != nil {
		got.runIndex = running.RunIndex
	}
	return got, claimed, nil
}

// lookAtJournal calls empty when the run's journal holds no step, read in
// the claim's transaction on SQLite after it raised the journal's fence:
// the run's first journal reads (Journal.Fence, each step's first lookup)
// are then answered from that (db.WithFreshJournal), two reads fewer per
// run for one count on the writer. Postgres's claim looks in its piped
// form; its fallback here does not (a round trip more for a rare path).
func (q *Queue) lookAtJournal(ctx context.Context, tx *sql.Tx, id string, empty func()) error {
	if q.journal == nil || q.dialect != "sqlite" {
		return nil
	}
	st, ok := q.journal.EmptyStmt(q.d, id, empty)
	if !ok {
		return nil
	}
	return st.Row(tx.QueryRowContext(ctx, st.Query, st.Args...))
}

// raisesFence reports whether the claim of attempt raises the run's journal
// fence. A first attempt's does not: there is no older attempt whose journal
// writes it would have to cut off, and its own step writes raise the fence
// in their transactions as they come (sqlstore's journalTx); its first
// journal reads are answered from the claim's look at the journal
// (db.WithFreshJournal), fence or no fence. A later attempt's claim raises
// it, so that the attempts before it can write nothing to the journal from
// that commit on. One statement less a claim: a fence row written at the
// claim only to be deleted with the journal when the run ends.
func (q *Queue) raisesFence(attempt int) bool { return q.journal != nil && attempt > 1 }

// claimPiped is the claim's common case on Postgres in one pipelined
// transaction, sharing a pipeline group: the job's claim, the journal's
// fence (a later attempt's: raisesFence), the run's row moved to RUNNING
// on the server (no read of the row first: db.PipedRunMover), the look at
// the journal and the read of the run's session. ok false: not claimed
// here (the dialect cannot, the job is not claimable, anything failed;
// nothing was written) and claim's transaction decides; tried: the
// pipeline was sent.
func (q *Queue) claimPiped(ctx context.Context, id string, attempt int, engineID int64) (got *claimedJob, ok, tried bool) {
	if q.dialect != "postgres" {
		return nil, false, false
	}
	cq, cargs := q.claimSQL(id, attempt, engineID, unixNow())
	stmts := []db.PipedStmt{{Query: cq, Args: cargs, Row: func(sc interface{ Scan(...any) error }) error {
		j, err := q.scanJob(sc, true)
		if errors.Is(err, sql.ErrNoRows) {
			return errNotClaimed
		}
		got = j
		return err
	}}}
	// The journal's fence after the job row (see claim).
	if q.raisesFence(attempt) {
		pf := q.journal.PipedFence(q.d, id, attempt)
		if pf == nil {
			return nil, false, false
		}
		fs, ok := pf(ctx)
		if !ok {
			return nil, false, false
		}
		stmts = append(stmts, fs...)
	}
	var (
		runSt  run.Status
		runIdx *int64
	)
	move, ok := q.d.RunningStmt(id, func(st run.Status, idx *int64) { runSt, runIdx = st, idx })
	if !ok {
		return nil, false, false
	}
	stmts = append(stmts, move)
	fresh := false
	if q.journal != nil {
		st, ok := q.journal.EmptyStmt(q.d, id, func() { fresh = true })
		if !ok {
			return nil, false, false
		}
		stmts = append(stmts, st)
	}
	// The run's session row, which the run reads first: in the batch it
	// costs no round trip of its own (db.WithClaimedSession).
	var (
		sess *db.Session
		mark uint64
	)
	if st, ok := q.d.SessionOfRunStmt(id, func(s *db.Session) { sess = s }); ok {
		stmts = append(stmts, st)
		mark = sessionline.Default().Mark() // before the batch reads the row
	}
	if err := q.d.SaveRunsPiped(db.WithLockKey(ctx, id), stmts, nil); err != nil || got == nil {
		return nil, false, true
	}
	got.session, got.sessionMark = sess, mark
	switch runSt {
	case run.StatusCompleted, run.StatusError, run.StatusCancelled:
		got.runFinal = runSt
	}
	got.freshJournal = fresh
	got.runIndex = runIdx
	return got, true, true
}

// claimSQL is the statement that checks and claims a job row for attempt
// of engineID's job, returning it: a row of that engine job (engineCol: a
// River job left behind by a deleted session, which nothing ended, must
// not claim a new enqueue of the same run id, whose row is another River
// job's) at the attempt before (an attempt is claimed after the one before
// it, never past one: see claim) that is queued and due (available_at
// reached: a failed attempt's retry waits its retry delay even when River
// dispatches it sooner, see notDue), or running with a lease that expired
// (its worker gone: no renewal for LockGrace, as the lease sweep decides).
// A running row whose lease is live is not taken: River re-dispatches a
// job that ran past its timeout while its worker may still be alive and
// renewing, and a slow-but-alive run is never taken over (Work snoozes the
// job instead: leaseLive). A cancel asked of a running job whose worker is
// gone is the lease sweep's to record (cancelled); it is not run again.
func (q *Queue) claimSQL(id string, attempt int, engineID, now int64) (string, []any) {
	expired := now - q.graceSeconds() // see leaseExpiry
	return q.sql(`UPDATE ` + q.jobs + ` SET status = ?, attempt = ?, locked_by = ?, locked_at = ?, updated_at = ?
WHERE id = ? AND ` + engineCol + ` = ? AND attempt = ? AND cancel_requested_at IS NULL AND ((status = ? AND available_at <= ?) OR (status = ? AND (locked_at IS NULL OR locked_at < ?)))
RETURNING ` + jobColumns + `, cancel_requested_at`), []any{StatusRunning, attempt, q.cfg.NodeID, now, now, id, engineID, attempt - 1, StatusQueued, now, StatusRunning, expired}
}

// ownOrphan reports whether j, a row the claim of engine's job at attempt
// could not take, is this node's own claim of that attempt that nothing
// here runs: the claim's COMMIT reached the database but its answer did
// not reach the worker (a lost connection, the attempt's timeout cutting
// the wait), so Work took the claim for failed and snoozed the job, which
// River dispatches again at the same attempt. Without adopting it, the job
// came back to a row it could not claim and was cancelled, and the lease
// sweep took the claim over as a dead worker's: an attempt spent, and at
// the last one the run ended ERROR without having run. (A claim of the
// row's next attempt when River's is ahead of it (see claim) is not
// adopted: the row's lease expires and the sweep requeues it, as before.)
func (q *Queue) ownOrphan(j *claimedJob, attempt int, engine int64) bool {
	if j == nil || j.Status != StatusRunning || j.Attempt != attempt || j.LockedBy != q.cfg.NodeID || j.engineID != engine || j.CancelRequested {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.running[j.ID] == nil
}

// adoptSQL takes over this node's own claim of engine's job at attempt
// (ownOrphan): the lease is stamped anew; the row is unchanged otherwise.
func (q *Queue) adoptSQL(id string, attempt int, engineID, now int64) (string, []any) {
	return q.sql(`UPDATE ` + q.jobs + ` SET locked_at = ?, updated_at = ?
WHERE id = ? AND ` + engineCol + ` = ? AND attempt = ? AND status = ? AND locked_by = ? AND cancel_requested_at IS NULL
RETURNING ` + jobColumns + `, cancel_requested_at`), []any{now, now, id, engineID, attempt, StatusRunning, q.cfg.NodeID}
}

// errJobDeleted: the job's row is gone while an attempt ran (its session
// was deleted, which deletes its jobs). It comes with run.ErrFenced
// (jobGone): the attempt's writes are refused like a superseded one's.
var errJobDeleted = errors.New("queue: the job was deleted")

// jobGone is the fence's refusal (and the heartbeat's cancel cause) for an
// attempt whose job row no longer exists.
func jobGone(id string) error {
	return fmt.Errorf("%w: %w: job %s is gone", run.ErrFenced, errJobDeleted, id)
}

// errNotClaimed rolls back a claim of a job that is not runnable.
var errNotClaimed = errors.New("queue: job not claimable")

// runningRow is the run's row turned RUNNING, or nil when the run is not
// PENDING or RUNNING (or cannot be read: the claim then leaves it alone);
// final is the row's status when it is COMPLETED, ERROR or CANCELLED. It
// is the only read of the run's row per claim: handlers are not called for
// a final run, so they need not read it again.
func (q *Queue) runningRow(ctx context.Context, id string) (next *db.Run, final run.Status) {
	row, err := q.d.GetRun(ctx, id)
	if err != nil {
		return nil, ""
	}
	switch row.Status {
	case run.StatusCompleted, run.StatusError, run.StatusCancelled:
		return nil, row.Status
	case run.StatusPending, run.StatusRunning:
	default:
		return nil, ""
	}
	out, err := row.Output()
	if err != nil {
		return nil, ""
	}
	out.Status = run.StatusRunning
	if next, err = db.RunFromOutput(out); err != nil {
		return nil, ""
	}
	// The row keeps its run_index (an upsert of an existing run does not
	// change it); carrying it spares Postgres the session lock that
	// assigning one takes (a round trip per claim).
	next.RunIndex = row.RunIndex
	return next, ""
}

// fenced returns ctx whose run writes are fenced on attempt of the job id
// (fence, piped as pipedFence) and keyed by the job row they lock, so that
// a shared transaction locks job rows in id order (db.WithLockKey), as the
// lease renewal does. The job fence vouches for the run's attempt
// (db.WithRunFenced): the claim raised the journal's fence with the job's
// attempt in one transaction, and only a claim raises either, so a write
// the job fence admits the journal's fence would admit too. The run's own
// saves then carry no journal fence statement.
func (q *Queue) fenced(ctx context.Context, id string, attempt int, engine int64) context.Context {
	fence := q.fence(id, attempt, engine)
	ctx = db.WithPipedWriteFence(ctx, fence, q.pipedFence(id, attempt, engine))
	// The journal's steps too: its fence row holds the attempt number only,
	// which the deleted run's attempt shares with a new enqueue of the same
	// run id (docs/adr/journal-job-fence.md).
	ctx = db.WithJournalWriteFence(ctx, q.d, fence)
	return db.WithLockKey(db.WithRunFenced(ctx, id, attempt), id)
}

// fence returns the write fence of attempt of engine's job: the run row is
// written only while the job row still holds this attempt, of this engine
// job (engineCol), and this node's lease.
//
// When the row written is the job's run in a final status (COMPLETED,
// ERROR, CANCELLED, or PAUSED), the same transaction records the job's
// outcome (as finish does) and, unless paused, clears the run's journal:
// the run's last save, its job's completion and the journal's deletion are
// one commit, and a crash cannot separate them. The holding remembers the
// outcome so that the worker does not record it again and heartbeats do
// not take the finished job for a takeover; a later write of the same
// attempt (a run saved twice at its end) still passes the fence.
func (q *Queue) fence(id string, attempt int, engine int64) db.TxFunc {
	return func(ctx context.Context, tx *sql.Tx) error {
		js := ""
		if r := db.SavingRun(ctx); r != nil && r.RunID == id {
			switch r.Status {
			case run.StatusCompleted, run.StatusError, run.StatusCancelled, run.StatusPaused:
				js = jobStatusOf(r.Status)
			}
		}
		if js != "" && !((js == StatusCancelled || js == StatusFailed) && q.stoppedHere(id, attempt, engine)) {
			// The run's final row: one statement checks the lease and
			// records the job's outcome (one round trip on Postgres); when
			// it matches no row, the read below says why.
			if recorded, err := q.recordFinal(ctx, tx, id, attempt, engine, js); err != nil || recorded {
				return err
			}
		}
		var cur int
		var by sql.NullString
		var status string
		var eng int64
		err := tx.QueryRowContext(ctx, q.sql(`SELECT attempt, locked_by, status, `+engineCol+` FROM `+q.jobs+` WHERE id = ?`+q.forUpdate()), id).Scan(&cur, &by, &status, &eng)
		switch {
		case errors.Is(err, sql.ErrNoRows), err == nil && eng != engine:
			// Deleted, or deleted and enqueued again (another engine job).
			return jobGone(id)
		case err != nil:
			return err
		case cur == attempt && !by.Valid && status != StatusRunning && status != StatusQueued && q.finishedHere(id, attempt, engine) == status:
			return nil // this attempt recorded its outcome already
		case cur != attempt || by.String != q.cfg.NodeID:
			return fmt.Errorf("%w: run %s is at attempt %d on %s, this is attempt %d", run.ErrFenced, id, cur, by.String, attempt)
		}
		if js == "" {
			return nil
		}
		if (js == StatusCancelled || js == StatusFailed) && q.stoppedHere(id, attempt, engine) {
			// This process stopped and cut the run short: it is not the
			// run's outcome. The run stays RUNNING with its job for
			// recovery (at once on a restarted single node, after
			// lock_grace on another replica).
			return fmt.Errorf("%w: the server stopped; run %s is left for recovery", run.ErrFenced, id)
		}
		// The lease was checked above and the row is locked: this records.
		_, err = q.recordFinal(ctx, tx, id, attempt, engine, js)
		return err
	}
}

// pipedFence is fence's piped form for the common cases: a run write
// while this attempt holds the lease (checked and locked), and the run's
// final row while it does (the job's outcome recorded, the journal
// cleared). Anything else (a lease lost, an outcome recorded already, a
// stop) fails or is not piped, and fence decides in a transaction of its
// own. Statements take ? placeholders (the driver rebinds them).
func (q *Queue) pipedFence(id string, attempt int, engine int64) db.PipedFunc {
	return func(ctx context.Context) ([]db.PipedStmt, bool) {
		js := ""
		if r := db.SavingRun(ctx); r != nil && r.RunID == id {
			switch r.Status {
			case run.StatusCompleted, run.StatusError, run.StatusCancelled, run.StatusPaused:
				js = jobStatusOf(r.Status)
			}
		}
		if js == "" {
			return []db.PipedStmt{{Query: `SELECT attempt FROM ` + q.jobs + ` WHERE id = ? AND attempt = ? AND locked_by = ? AND ` + engineCol + ` = ? FOR UPDATE`,
				Args: []any{id, attempt, q.cfg.NodeID, engine}, Row: scanOne}}, true
		}
		if (js == StatusCancelled || js == StatusFailed) && q.stoppedHere(id, attempt, engine) {
			return nil, false
		}
		now := unixNow()
		stmts := []db.PipedStmt{{Query: `UPDATE ` + q.jobs + ` SET status = ?, error = NULL, locked_by = NULL, locked_at = NULL, updated_at = ?, completed_at = ?
WHERE id = ? AND attempt = ? AND locked_by = ? AND ` + engineCol + ` = ? RETURNING attempt`, Args: []any{js, now, now, id, attempt, q.cfg.NodeID, engine},
			Row: func(sc interface{ Scan(...any) error }) error {
				if err := scanOne(sc); err != nil {
					return err
				}
				q.markFinished(id, attempt, engine, js)
				return nil
			}}}
		if js != StatusPaused && q.journal != nil {
			if st, ok := q.journal.ClearStmt(q.d, id); ok {
				stmts = append(stmts, st)
			} else if q.journal.ClearTx(q.d, id) != nil {
				return nil, false
			}
		}
		return stmts, true
	}
}

// scanOne reads a one-column row (sql.ErrNoRows: none).
func scanOne(sc interface{ Scan(...any) error }) error {
	var v any
	return sc.Scan(&v)
}

// recordFinal records attempt's outcome js with the run's final save in
// tx when the job row holds attempt and this node's lease (recorded false
// otherwise, with nothing written), and clears the run's journal unless
// paused.
func (q *Queue) recordFinal(ctx context.Context, tx *sql.Tx, id string, attempt int, engine int64, js string) (recorded bool, err error) {
	now := unixNow()
	res, err := tx.ExecContext(ctx, q.sql(`UPDATE `+q.jobs+` SET status = ?, error = NULL, locked_by = NULL, locked_at = NULL, updated_at = ?, completed_at = ?
WHERE id = ? AND attempt = ? AND locked_by = ? AND `+engineCol+` = ?`), js, now, now, id, attempt, q.cfg.NodeID, engine)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return false, err
	}
	if js != StatusPaused && q.journal != nil {
		if clear := q.journal.ClearTx(q.d, id); clear != nil {
			if err := clear(ctx, tx); err != nil {
				return false, err
			}
		}
	}
	q.markFinished(id, attempt, engine, js)
	return true, nil
}

// markFinished notes that attempt's outcome (a job status) is in a
// transaction that records it (committed, or about to be).
func (q *Queue) markFinished(id string, attempt int, engine int64, status string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if h := q.running[id]; h.holds(attempt, engine) {
		h.finished = status
	}
}

// finishedHere is the outcome markFinished noted for attempt, or "".
func (q *Queue) finishedHere(id string, attempt int, engine int64) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	if h := q.running[id]; h.holds(attempt, engine) {
		return h.finished
	}
	return ""
}

// recordedOutcome reports whether attempt's outcome was committed with the
// run's final save (the fence's in-transaction finish): the job row then
// holds the status finishedHere noted, with no lease.
func (q *Queue) recordedOutcome(ctx context.Context, id string, attempt int, engine int64) (string, bool) {
	want := q.finishedHere(id, attempt, engine)
	if want == "" {
		return "", false
	}
	var cur int
	var by sql.NullString
	var status string
	var eng int64
	err := q.w.QueryRowContext(ctx, q.sql(`SELECT attempt, locked_by, status, `+engineCol+` FROM `+q.jobs+` WHERE id = ?`), id).Scan(&cur, &by, &status, &eng)
	if err != nil || cur != attempt || eng != engine || by.Valid || status != want {
		return "", false
	}
	return status, true
}

func (q *Queue) forUpdate() string {
	if q.dialect == "postgres" {
		return " FOR UPDATE"
	}
	return ""
}

// jobStatusOf maps a run's final status to its job's.
func jobStatusOf(s run.Status) string {
	switch s {
	case run.StatusCompleted:
		return StatusCompleted
	case run.StatusCancelled:
		return StatusCancelled
	case run.StatusPaused:
		return StatusPaused
	}
	return StatusFailed
}

// finish records attempt's outcome, fenced on the attempt and the lease,
// and clears the run's journal (unless paused) in the same transaction.
func (q *Queue) finish(ctx context.Context, id string, attempt int, engine int64, status, reason string) bool {
	now := unixNow()
	var clear db.TxFunc
	if q.journal != nil && status != StatusPaused {
		clear = q.journal.ClearTx(q.d, id)
	}
	n := int64(0)
	err := q.inTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, q.sql(`UPDATE `+q.jobs+` SET status = ?, error = ?, locked_by = NULL, locked_at = NULL, updated_at = ?, completed_at = ?
WHERE id = ? AND attempt = ? AND locked_by = ? AND `+engineCol+` = ?`), status, nullable(reason), now, now, id, attempt, q.cfg.NodeID, engine)
		if err != nil {
			return err
		}
		if n, _ = res.RowsAffected(); n == 1 && clear != nil {
			return clear(ctx, tx)
		}
		return nil
	})
	if err != nil {
		q.cfg.Logger.ErrorContext(ctx, "queue: record outcome", "run_id", id, "status", status, "err", err)
		return false
	}
	if n == 1 && status != StatusPaused && clear == nil {
		q.clearJournal(ctx, id)
	}
	return n == 1
}

// retryLater puts the job back in line after a failed attempt; requeued
// false (with a nil error) when the job row no longer holds the attempt's
// lease (deleted, taken over), and the run's row is left alone.
func (q *Queue) retryLater(ctx context.Context, id string, attempt int, engine int64, delay time.Duration, reason string) (requeued bool, err error) {
	now := unixNow()
	res, err := q.w.ExecContext(ctx, q.sql(`UPDATE `+q.jobs+` SET status = ?, error = ?, locked_by = NULL, locked_at = NULL, updated_at = ?, available_at = ?
WHERE id = ? AND attempt = ? AND locked_by = ? AND `+engineCol+` = ?`), StatusQueued, reason, now, now+int64(delay/time.Second), id, attempt, q.cfg.NodeID, engine)
	var n int64
	if err == nil {
		n, err = res.RowsAffected()
	}
	if err != nil {
		q.cfg.Logger.ErrorContext(ctx, "queue: requeue after failure", "run_id", id, "err", err)
	} else if n != 1 {
		return false, nil
	}
	q.setRunStatus(ctx, id, run.StatusPending, "", q.jobAtFence(id, attempt, StatusQueued))
	return n == 1, err
}

// fail ends the job as failed with reason and its run as ERROR.
// It reports whether the job's row recorded it.
func (q *Queue) fail(ctx context.Context, j Job, attempt int, engine int64, reason string) bool {
	if !q.finish(ctx, j.ID, attempt, engine, StatusFailed, reason) {
		return false
	}
	// Fenced on the job still failed at this attempt: once it is failed,
	// a Requeue may queue it again and move its run to PENDING before this
	// move is written, which, without the fence, wrote ERROR over it (the
	// requeued job's claim then found its run final and failed it again).
	q.setRunStatus(ctx, j.ID, run.StatusError, reason, q.jobAtFence(j.ID, attempt, StatusFailed))
	return true
}

// finishCancelled ends the job and its run as cancelled.
// It reports whether the job's row recorded it.
func (q *Queue) finishCancelled(ctx context.Context, j Job, attempt int, engine int64, reason string) bool {
	if !q.finish(ctx, j.ID, attempt, engine, StatusCancelled, reason) {
		return false
	}
	// Fenced as fail's move is (a Requeue may follow the finish).
	q.setRunStatus(ctx, j.ID, run.StatusCancelled, "run "+j.ID+" was "+reason, q.jobAtFence(j.ID, attempt, StatusCancelled))
	return true
}

// inTx runs fn in a transaction on the writer.
func (q *Queue) inTx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := q.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	return tx.Commit()
}
