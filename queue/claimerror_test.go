package queue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// A claim that fails (here a trigger refusing it, as an unreachable
// database would) runs no attempt and spends none: with max_attempts 1,
// River discarded the job on the claim's error and the run's row stayed
// queued with nothing to dispatch it, forever. The job now comes back
// after the retry delay and the run completes, at attempt 1, once claims
// work again.
func TestClaim_FailedClaimSpendsNoAttempt(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		cfg := testCfg()
		cfg.MaxAttempts = 1
		cfg.RetryDelay = 100 * time.Millisecond
		q := openQueueWith(t, d, cfg, complete(d), func(q *queue.Queue) {
			if err := q.FailClaims(ctx, true); err != nil {
				t.Fatal(err)
			}
		})
		enqueue(t, q, "claimfails")
		waitForEngineJobs(t, q, "claimfails", "a refused claim of the job", func(engine []queue.EngineJob) bool {
			return len(engine) == 1 && (engine[0].Snoozes > 0 || engine[0].State == "discarded")
		})
		if err := q.FailClaims(ctx, false); err != nil {
			t.Fatal(err)
		}
		waitForDescribed(t, "the run completed once claims work again", func() bool {
			return jobOf(t, q, "claimfails").Status == queue.StatusCompleted
		}, func() string {
			j := jobOf(t, q, "claimfails")
			e, _ := q.EngineJobs(ctx, "claimfails")
			return fmt.Sprint(*j, e)
		})
		if j := jobOf(t, q, "claimfails"); j.Attempt != 1 {
			t.Errorf("the run completed at attempt %d, want 1 (a failed claim is no attempt)", j.Attempt)
		}
		if st := runStatus(t, d, "claimfails"); st != run.StatusCompleted {
			t.Errorf("run row %s, want COMPLETED", st)
		}
	})
}
