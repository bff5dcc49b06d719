package queue_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
)

// A River job left behind by a deleted session (queued when the session
// was deleted, so nothing ended it) must not claim a new enqueue of the
// same run id (a repeated Idempotency-Key names the same id): the new row
// is its own River job's. The leftover job ends without running anything
// and the new one runs the run, once. Before, the claim did not look at
// the row's engine job: the leftover job, fetched first, claimed and ran
// the new row (at its own attempt count) and the new River job was
// cancelled.
func TestClaim_LeftoverEngineJobOfADeletedRunCannotClaimItsNewEnqueue(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		h, calls := completing(d)
		cfg := testCfg()
		// One worker fetches River's jobs one at a time, oldest first: the
		// leftover job comes first.
		cfg.MaxConcurrency = 1
		q := openQueueWith(t, d, cfg, h, func(q *queue.Queue) {
			enqueueKeyed(t, q, "again")
			if err := d.DeleteSessions(ctx, "s-again"); err != nil {
				t.Fatal(err)
			}
			enqueueKeyed(t, q, "again")
		})
		waitFor(t, "the new run completed", func() bool { return jobOf(t, q, "again").Status == queue.StatusCompleted })
		engine := waitForEngineJobs(t, q, "again", "both River jobs to end", func(engine []queue.EngineJob) bool {
			return len(engine) == 2 && ended(engine[0]) && ended(engine[1])
		})
		if engine[0].State != "cancelled" || engine[1].State != "completed" {
			t.Errorf("River jobs, oldest first: %+v; want the leftover one cancelled, the new one completed", engine)
		}
		if n := calls.Load(); n != 1 {
			t.Errorf("the handler ran %d times, want 1", n)
		}
		if j := jobOf(t, q, "again"); j.Attempt != 1 {
			t.Errorf("the new run completed at attempt %d, want 1", j.Attempt)
		}
	})
}

func ended(e queue.EngineJob) bool {
	return e.State == "completed" || e.State == "cancelled" || e.State == "discarded"
}
