package queue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// An attempt this node re-claims the run id of (its job deleted with its
// session, the run id enqueued again) is stopped at once, but it keeps
// executing until its handler returns: Running and the peak count it until
// then, where before the new holding replaced it in the count at the claim
// (one run counted for two executing).
func TestRunning_ReplacedAttemptCountsUntilItReturns(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		var calls atomic.Int32
		firstIn, firstGo, secondIn, secondGo := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan struct{})
		firstCause := make(chan error, 1)
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			if calls.Add(1) > 1 {
				close(secondIn)
				<-secondGo
				return finishRun(ctx, d, j.ID, run.StatusCompleted)
			}
			close(firstIn)
			<-firstGo
			firstCause <- context.Cause(ctx)
			return run.StatusCompleted, nil
		}
		cfg := testCfg()
		cfg.LockGrace = time.Minute // no lease sweep while heartbeats are stopped
		q := openQueueWith(t, d, cfg, h, func(q *queue.Queue) { q.StopHeartbeats() })
		ctx := context.Background()
		enqueueKeyed(t, q, "twice")
		<-firstIn
		if err := d.DeleteSessions(ctx, "s-twice"); err != nil {
			t.Fatal(err)
		}
		enqueueKeyed(t, q, "twice")
		<-secondIn
		// Both handlers are executing now: the first is stopped, not gone.
		if now, peak := q.Running(); now != 2 || peak != 2 {
			t.Errorf("with the replaced attempt still executing: Running() = %d now, %d peak; want 2, 2", now, peak)
		}
		close(firstGo)
		if err := <-firstCause; err == nil {
			t.Errorf("the replaced attempt's context was not ended by the new claim")
		}
		var now, peak int
		waitForDescribed(t, "the replaced attempt to leave the count", func() bool {
			now, peak = q.Running()
			return now == 1
		}, func() string { return fmt.Sprintf("now %d, peak %d", now, peak) })
		close(secondGo)
		waitFor(t, "the new run completed", func() bool { return jobOf(t, q, "twice").Status == queue.StatusCompleted })
		waitFor(t, "no run executing", func() bool { now, _ := q.Running(); return now == 0 })
		if _, peak := q.Running(); peak != 2 {
			t.Errorf("peak %d, want 2", peak)
		}
	})
}
