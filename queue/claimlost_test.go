package queue_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// A claim whose COMMIT reached Postgres but whose answer was lost (the
// connection dropped, or the attempt's timeout cut the wait for it) left
// the job row RUNNING at the attempt, locked by this node, with no run
// held: the job came back after its snooze, found the row not claimable
// and was cancelled, and the lease sweep then took the orphaned claim over
// as a dead worker's. At the run's last attempt (max_attempts 1, Agno's
// default) the run ended ERROR, "stopped without finishing it", without
// ever running. The worker now recognises its own claim and runs it.
func TestClaim_LostCommitReplyIsAdoptedNotFailed(t *testing.T) {
	d, p := proxiedPostgresPool(t, 4)
	cfg := testCfg()
	cfg.MaxAttempts = 1
	h, calls := completing(d)
	var once sync.Once
	q := openQueueWith(t, d, cfg, h, func(q *queue.Queue) {
		q.BeforeClaim(func(string, int) {
			// The next pipelined COMMIT is the claim's.
			once.Do(func() { p.LoseReplyTo([]byte("COMMIT\x00")) })
		})
	})
	id := "lost-claim-reply"
	enqueue(t, q, id)
	var j *queue.Job
	waitForDescribed(t, "the job to end", func() bool {
		j = jobOf(t, q, id)
		return j.Status != queue.StatusRunning && j.Status != queue.StatusQueued
	}, func() string { return fmt.Sprintf("%+v", j) })
	if j.Status != queue.StatusCompleted || j.Attempt != 1 {
		t.Errorf("the job is %s at attempt %d (%s), want completed at 1", j.Status, j.Attempt, j.Error)
	}
	if st := runStatus(t, d, id); st != run.StatusCompleted {
		t.Errorf("the run is %s, want COMPLETED", st)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want once", n)
	}
}
