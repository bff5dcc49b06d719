package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
)

// A failed claim's count was dropped only when a later claim of the same
// River job worked or ended its run in this process: a job that never
// came back here (cancelled while snoozed, deleted with its session,
// fetched by another process, or this process no longer fetching) kept
// its count for the life of the process, one entry per such job, and
// every claim then took the queue's lock to forget nothing. A count is
// now dropped once kept past its job's retry delay.
func TestClaim_FailureCountOfAJobThatNeverComesBackIsDropped(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		cfg := testCfg()
		cfg.MaxAttempts = 50 // the claims' failures do not end the run meanwhile
		cfg.RetryDelay = 200 * time.Millisecond
		q := openQueueWith(t, d, cfg, complete(d), func(q *queue.Queue) {
			q.KeepClaimFailures(100 * time.Millisecond)
			if err := q.FailClaims(ctx, true); err != nil {
				t.Fatal(err)
			}
		})
		enqueue(t, q, "never-back")
		waitFor(t, "a failed claim counted", func() bool { return q.ClaimFailing() > 0 })
		// This process fetches no more: the job's next claim, if any, is
		// another process's.
		q.Hang()
		waitForDescribed(t, "the count of a job that does not come back dropped", func() bool { return q.ClaimFailing() == 0 },
			func() string { return fmt.Sprint("jobs counted: ", q.ClaimFailing()) })
	})
}
