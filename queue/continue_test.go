package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// pausedJob enqueues id on q, whose handler pauses every run, and waits
// until its job is paused.
func pausedJob(t *testing.T, q *queue.Queue, id string) *queue.Job {
	t.Helper()
	_, _, j := pending(id, "u1")
	enqueue(t, q, id)
	waitFor(t, "the job paused", func() bool { return jobOf(t, q, id).Status == queue.StatusPaused })
	return j
}

// twoNodes opens node-a and node-b on d with cfg (each with handler h).
func twoNodes(t *testing.T, d *db.DB, cfg queue.Config, h queue.Handler) (a, b *queue.Queue) {
	t.Helper()
	cfg.NodeID = "node-a"
	a = openQueue(t, d, cfg, h)
	cfg.NodeID = "node-b"
	return a, openQueue(t, d, cfg, h)
}

func pausing(d *db.DB) queue.Handler {
	return func(ctx context.Context, j *queue.Job) (run.Status, error) {
		return finishRun(ctx, d, j.ID, run.StatusPaused)
	}
}

// The continue of a paused background run holds its job: running at its
// next (and last) attempt on this node. A second continue, through another
// node, is ErrHeld. When this node dies mid-continue, the other marks the
// job failed and the run ERROR after lock_grace (it stayed RUNNING for
// good: the job was paused, which no sweep looks at), and the dead node's
// late write is fenced.
func TestHoldContinue_CrashMidContinueEndsTheRunError(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		cfg := testCfg()
		cfg.LockGrace = time.Second
		cfg.PollInterval = 100 * time.Millisecond
		a, b := twoNodes(t, d, cfg, pausing(d))

		j := pausedJob(t, a, "c")
		before := jobOf(t, a, "c").Attempt
		ctx, _, err := a.HoldContinue(context.Background(), j)
		if err != nil {
			t.Fatal(err)
		}
		held := jobOf(t, b, "c")
		if held.Status != queue.StatusRunning || held.Attempt != before+1 || held.MaxAttempts != before+1 || held.LockedBy != "node-a" {
			t.Fatalf("held job %+v, want running at attempt %d of %d on node-a", held, before+1, before+1)
		}
		if _, _, err := b.HoldContinue(context.Background(), j); !errors.Is(err, queue.ErrHeld) {
			t.Fatalf("a second continue through node B: %v, want ErrHeld", err)
		}
		// The continue starts: the run is stored RUNNING under the lease.
		if _, err := finishRun(ctx, d, "c", run.StatusRunning); err != nil {
			t.Fatalf("the continue's fenced write: %v", err)
		}
		time.Sleep(3 * cfg.LockGrace)
		if ctx.Err() != nil || jobOf(t, b, "c").Status != queue.StatusRunning {
			t.Fatalf("a live continue's lease was taken: %v, job %+v", context.Cause(ctx), jobOf(t, b, "c"))
		}
		a.Hang()
		waitFor(t, "node B marks the hung node's continued run ERROR", func() bool { return storedRunStatus(t, d, "c") == run.StatusError })
		if j := jobOf(t, b, "c"); j.Status != queue.StatusFailed {
			t.Fatalf("swept job %+v", j)
		}
		if _, err := finishRun(ctx, d, "c", run.StatusCompleted); !errors.Is(err, run.ErrFenced) {
			t.Fatalf("late write of the swept continue: %v", err)
		}
		if st := storedRunStatus(t, d, "c"); st != run.StatusError {
			t.Fatalf("run is %s after the late write", st)
		}
	})
}

// A cancel through another node reaches a continue held on this one (its
// context ends with ErrCancelled at this node's next heartbeat), and the
// continue's CANCELLED save records the job cancelled; the job then takes
// no continue.
func TestHoldContinue_CancelThroughAnotherNodeReachesTheContinue(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		a, b := twoNodes(t, d, testCfg(), pausing(d))

		j := pausedJob(t, a, "c")
		ctx, done, err := a.HoldContinue(context.Background(), j)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := finishRun(ctx, d, "c", run.StatusRunning); err != nil {
			t.Fatal(err)
		}
		res, err := b.Cancel(context.Background(), "c")
		if err != nil || res.Status != queue.StatusRunning {
			t.Fatalf("cancel through node B: %+v, %v (want the running job flagged)", res, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(30 * time.Second):
			t.Fatal("the continue's context was not cancelled")
		}
		if !errors.Is(context.Cause(ctx), queue.ErrCancelled) {
			t.Fatalf("cause %v", context.Cause(ctx))
		}
		if _, err := finishRun(ctx, d, "c", run.StatusCancelled); err != nil {
			t.Fatal(err)
		}
		done(run.StatusCancelled)
		if got := jobOf(t, b, "c"); got.Status != queue.StatusCancelled {
			t.Fatalf("job %+v after the cancelled continue", got)
		}
		if _, _, err := a.HoldContinue(context.Background(), j); !errors.Is(err, queue.ErrHeld) {
			t.Fatalf("continue of the cancelled job: %v, want ErrHeld", err)
		}
	})
}

// A continue that stores nothing (its answers refused) leaves the job
// paused, at the attempt it took, for the next continue; one that ends
// the run records the run's end on the job with its final save.
func TestHoldContinue_JobTakesTheContinuesEnd(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		q := openQueue(t, d, testCfg(), pausing(d))
		j := pausedJob(t, q, "c")
		first := jobOf(t, q, "c").Attempt
		_, done, err := q.HoldContinue(context.Background(), j)
		if err != nil {
			t.Fatal(err)
		}
		done(run.StatusPaused)
		if got := jobOf(t, q, "c"); got.Status != queue.StatusPaused || got.Attempt != first+1 || got.LockedBy != "" {
			t.Fatalf("job %+v after a continue that stored nothing, want paused at attempt %d", got, first+1)
		}
		ctx, done, err := q.HoldContinue(context.Background(), j)
		if err != nil {
			t.Fatalf("the next continue: %v", err)
		}
		if _, err := finishRun(ctx, d, "c", run.StatusCompleted); err != nil {
			t.Fatal(err)
		}
		if got := jobOf(t, q, "c"); got.Status != queue.StatusCompleted || got.CompletedAt == 0 {
			t.Fatalf("job %+v after the run's final save, want completed", got)
		}
		done(run.StatusCompleted)
		if got := jobOf(t, q, "c"); got.Status != queue.StatusCompleted || got.Attempt != first+2 {
			t.Fatalf("job %+v after done", got)
		}
	})
}

// A paused run with no job (a streamed or synchronous run that paused:
// its lease was released) gets a foreground lease for its continue, one
// at a time; done releases it.
func TestHoldContinue_RunWithoutAJobGetsAForegroundLease(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		q := openQueue(t, d, testCfg(), complete(d))
		j := storeRunning(t, d, "fg")
		if _, err := finishRun(context.Background(), d, "fg", run.StatusPaused); err != nil {
			t.Fatal(err)
		}
		ctx, done, err := q.HoldContinue(context.Background(), j)
		if err != nil {
			t.Fatal(err)
		}
		if got := jobOf(t, q, "fg"); got.Status != queue.StatusRunning || got.JobType != queue.JobTypeForeground || got.Attempt != 1 {
			t.Fatalf("lease %+v", got)
		}
		if _, _, err := q.HoldContinue(context.Background(), j); !errors.Is(err, queue.ErrHeld) {
			t.Fatalf("a second continue: %v, want ErrHeld", err)
		}
		if _, err := finishRun(ctx, d, "fg", run.StatusCompleted); err != nil {
			t.Fatal(err)
		}
		done(run.StatusCompleted)
		if _, err := q.Get(context.Background(), "fg", "", false); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("the released lease: %v", err)
		}
	})
}

// A paused job whose run was continued to its end outside the queue (by a
// process without the continue's lease: a library caller on the same
// database, a server without a durable queue) and is then cancelled
// records the run's end, as the repair pass would: the cancel reports the
// job completed and cancels nothing. The job said "cancelled before it
// started" beside a COMPLETED run.
func TestCancel_PausedJobOfARunThatEndedRecordsItsEnd(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		q := openQueue(t, d, testCfg(), pausing(d))
		pausedJob(t, q, "ended")
		if _, err := finishRun(context.Background(), d, "ended", run.StatusCompleted); err != nil {
			t.Fatal(err)
		}
		res, err := q.Cancel(context.Background(), "ended")
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != queue.StatusCompleted {
			t.Errorf("cancel of a job whose run completed reported %q, want %q", res.Status, queue.StatusCompleted)
		}
		if got := jobOf(t, q, "ended"); got.Status != queue.StatusCompleted || got.Error != "" || got.CompletedAt == 0 || got.LockedBy != "" {
			t.Errorf("job %+v, want completed with no error", got)
		}
		if row, err := d.GetRun(context.Background(), "ended"); err != nil || row.Status != run.StatusCompleted {
			t.Errorf("run %v, %v, want COMPLETED", row.Status, err)
		}
	})
}
