package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// A run re-dispatched while it runs (River's rescuer) has its River job
// snoozed by the claim its live lease refused. When the running attempt
// then fails, the queue requeues it with available_at one retry delay
// ahead, but River records that attempt's end only on a job still
// running: the snoozed job comes back when its snooze ends, whatever the
// retry delay. The retry must still not start before its available_at.
func TestClaim_RetryAfterASnoozeWaitsItsRetryDelay(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		cfg := testCfg()
		// The snooze ends within about 2.5 s of the claim it refused
		// (lock_grace plus a renewal period); the retry delay ends after it.
		cfg.RetryDelay = 3 * time.Second
		var mu sync.Mutex
		var starts []time.Time
		var failed time.Time
		started, release := make(chan struct{}), make(chan struct{})
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			mu.Lock()
			starts = append(starts, time.Now())
			n := len(starts)
			mu.Unlock()
			if n == 1 {
				close(started)
				<-release
				mu.Lock()
				failed = time.Now()
				mu.Unlock()
				return "", errors.New("the model provider is down")
			}
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		}
		q := openQueue(t, d, cfg, h)
		ctx := context.Background()
		enqueue(t, q, "snoozeretry")
		<-started
		if err := q.Redispatch(ctx, "snoozeretry"); err != nil {
			t.Fatal(err)
		}
		waitForEngineJobs(t, q, "snoozeretry", "the redispatched job to be snoozed", func(engine []queue.EngineJob) bool {
			return len(engine) == 1 && engine[0].Snoozes > 0 && engine[0].State != "running"
		})
		// Fail at the start of a second: available_at (whole seconds) is
		// then nearly the full retry delay ahead of the failure.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
		close(release)
		var requeued *queue.Job
		waitFor(t, "the failed attempt requeued", func() bool {
			requeued = jobOf(t, q, "snoozeretry")
			return requeued.Status != queue.StatusRunning || requeued.Attempt != 1
		})
		waitFor(t, "the retried run completed", func() bool { return jobOf(t, q, "snoozeretry").Status == queue.StatusCompleted })
		mu.Lock()
		defer mu.Unlock()
		if len(starts) != 2 {
			t.Fatalf("the handler ran %d times, want 2", len(starts))
		}
		if requeued.Status != queue.StatusQueued {
			t.Fatalf("after the failure the job was %s at attempt %d, want queued", requeued.Status, requeued.Attempt)
		}
		due := time.Unix(requeued.AvailableAt, 0)
		if starts[1].Before(due) {
			t.Errorf("attempt 2 started %s before its available_at (%s after the failure; retry delay %s)",
				due.Sub(starts[1]).Round(time.Millisecond), starts[1].Sub(failed).Round(time.Millisecond), cfg.RetryDelay)
		}
		// (River's attempt may be 3 when the failed attempt's end landed
		// while the snoozed job was fetched; the run's is 2: see
		// TestClaim_FailureLandingOnASnoozedFetchSpendsNoAttempt.)
		if j := jobOf(t, q, "snoozeretry"); j.Attempt != 2 {
			t.Errorf("the retried run completed at attempt %d, want 2", j.Attempt)
		}
	})
}

// River's attempt must not run ahead of the run's. A run re-dispatched
// while it runs has its River job snoozed by its live lease; the job is
// fetched again when the snooze ends. When the running attempt's failure
// lands on River while that fetch holds the job (River records it on the
// job, which is running again), the fetch's snooze (its claim waits for
// the retry delay) finds the job no longer running and is dropped: River
// has spent an attempt that ran nothing, and the next fetch claimed the
// run at attempt 3, one retry fewer than max_attempts allows.
func TestClaim_FailureLandingOnASnoozedFetchSpendsNoAttempt(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		cfg := testCfg() // 3 attempts
		// Whole seconds: the retry is not due when the held fetch claims.
		cfg.RetryDelay = 2 * time.Second
		var mu sync.Mutex
		var attempts []int
		started, release := make(chan struct{}), make(chan struct{})
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			mu.Lock()
			attempts = append(attempts, j.Attempt)
			n := len(attempts)
			mu.Unlock()
			if n == 1 {
				close(started)
				<-release
			}
			return "", errors.New("the model provider is down")
		}
		fetched, resume := make(chan struct{}), make(chan struct{})
		var works atomic.Int32
		q := openQueueWith(t, d, cfg, h, func(q *queue.Queue) {
			q.BeforeClaim(func(id string, attempt int) {
				// 1: attempt 1; 2: the re-dispatch, snoozed by the live
				// lease; 3: the fetch after that snooze, held here.
				if works.Add(1) == 3 {
					close(fetched)
					<-resume
				}
			})
		})
		ctx := context.Background()
		enqueue(t, q, "landing")
		<-started
		if err := q.Redispatch(ctx, "landing"); err != nil {
			t.Fatal(err)
		}
		<-fetched
		// Attempt 1 fails while the fetch holds the job; River records
		// its end on the running job.
		close(release)
		waitForEngineJobs(t, q, "landing", "attempt 1's failure recorded by River", func(engine []queue.EngineJob) bool {
			return len(engine) == 1 && engine[0].State != "running"
		})
		close(resume)
		waitForDescribed(t, "the run failed", func() bool { return jobOf(t, q, "landing").Status == queue.StatusFailed }, func() string {
			e, _ := q.EngineJobs(ctx, "landing")
			return fmt.Sprint(*jobOf(t, q, "landing"), e)
		})
		mu.Lock()
		defer mu.Unlock()
		if fmt.Sprint(attempts) != "[1 2 3]" {
			t.Errorf("the handler ran attempts %v, want [1 2 3] (max_attempts 3)", attempts)
		}
		if j := jobOf(t, q, "landing"); j.Attempt != 3 || !strings.Contains(j.Error, "attempt 3 of 3 failed") {
			t.Errorf("the job failed at attempt %d (%q), want attempt 3 of 3", j.Attempt, j.Error)
		}
		waitForEngineJobs(t, q, "landing", "the River job to end", func(engine []queue.EngineJob) bool {
			return len(engine) == 1 && ended(engine[0])
		})
	})
}
