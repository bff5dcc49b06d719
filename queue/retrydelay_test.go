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

// TestRetryDelay_PerJobReplacesTheQueues: the queue waits an hour between
// attempts; a job with its own one-second retry delay (a schedule's
// retry_delay_seconds) is retried after that second, and its row's
// available_at says so.
func TestRetryDelay_PerJobReplacesTheQueues(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		cfg := testCfg()
		cfg.RetryDelay = time.Hour
		var mu sync.Mutex
		var at []time.Time
		var seen *queue.Job
		var q *queue.Queue
		q = openQueue(t, d, cfg, func(ctx context.Context, j *queue.Job) (run.Status, error) {
			mu.Lock()
			at = append(at, time.Now())
			n := len(at)
			mu.Unlock()
			if n == 1 {
				return "", errors.New("the model provider is down")
			}
			got, err := q.Get(ctx, j.ID, "", false)
			if err != nil {
				return "", err
			}
			mu.Lock()
			seen = got
			mu.Unlock()
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		})
		s, r, j := pending("rd1", "u1")
		j.RetryDelay = time.Second
		if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the retried job completed", func() bool { return jobOf(t, q, "rd1").Status == queue.StatusCompleted })
		mu.Lock()
		defer mu.Unlock()
		if len(at) != 2 {
			t.Fatalf("%d attempts, want 2", len(at))
		}
		if gap := at[1].Sub(at[0]); gap < 900*time.Millisecond {
			t.Errorf("retried %s after the failure, want about 1 s", gap)
		}
		if seen == nil || seen.Attempt != 2 || seen.AvailableAt < seen.CreatedAt+1 {
			t.Errorf("job at attempt 2 = %+v, want available_at one second after the failure", seen)
		}
	})
}

func TestRetryDelay_MustBeWholeSeconds(t *testing.T) {
	d := drivers["sqlite"](t)
	q := openQueue(t, d, testCfg(), complete(d))
	s, r, j := pending("rd2", "u1")
	j.RetryDelay = 1500 * time.Millisecond
	if _, _, err := q.Enqueue(context.Background(), s, r, j); err == nil {
		t.Fatal("a retry delay of 1.5 s was accepted")
	}
}
