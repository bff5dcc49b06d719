package queue_test

import (
	"context"
	"errors"
	"sync"
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
		// (agno_jobs' attempt may be 3: River counts its attempt again when
		// the failed attempt's end lands while the snoozed job is fetched.)
	})
}
