package queue_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// A claim that fails because the database refuses every write (here a
// trigger refusing each update of a job row, as a database that is down
// would) runs no attempt and spends none: with max_attempts 1, River
// discarded the job on the claim's error and the run's row stayed queued
// with nothing to dispatch it, forever. The job now comes back after the
// retry delay, past the bound of failed claims too (the write that would
// end the run is refused as well: a transient outage fails no run), and
// the run completes, at attempt 1, once claims work again.
func TestClaim_FailedClaimSpendsNoAttempt(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		cfg := testCfg()
		cfg.MaxAttempts = 1
		cfg.RetryDelay = 100 * time.Millisecond
		// The bound of failed claims is 3 (queue.MinClaimTries) for a job
		// of one attempt: the fourth claim comes after the run's end was
		// tried and refused. Writes work again before the fifth (not
		// between a claim and the write that would end the run).
		var claims atomic.Int32
		q := openQueueWith(t, d, cfg, complete(d), func(q *queue.Queue) {
			if err := q.FailJobWrites(ctx, true); err != nil {
				t.Fatal(err)
			}
			q.BeforeClaim(func(string, int) {
				if claims.Add(1) == queue.MinClaimTries+2 {
					if err := q.FailJobWrites(ctx, false); err != nil {
						t.Error(err)
					}
				}
			})
		})
		enqueue(t, q, "claimfails")
		waitForDescribed(t, "the run completed once claims work again", func() bool {
			return jobOf(t, q, "claimfails").Status == queue.StatusCompleted
		}, func() string {
			j := jobOf(t, q, "claimfails")
			e, _ := q.EngineJobs(ctx, "claimfails")
			return fmt.Sprint(*j, e)
		})
		if n := claims.Load(); n < queue.MinClaimTries+2 {
			t.Errorf("%d claims, want the run's end tried and refused first", n)
		}
		if j := jobOf(t, q, "claimfails"); j.Attempt != 1 {
			t.Errorf("the run completed at attempt %d, want 1 (a failed claim is no attempt)", j.Attempt)
		}
		if st := runStatus(t, d, "claimfails"); st != run.StatusCompleted {
			t.Errorf("run row %s, want COMPLETED", st)
		}
	})
}

// A claim that keeps failing while the database takes other writes (a
// permanent error: here a trigger refusing the claim's update) used to
// snooze its job forever, the run queued and PENDING for good. Once the
// claim failed as many times as the job's attempts allow, the run ends as
// ERROR with the claim's error as its reason, in the job row (GET
// /queue/jobs) and the run row, and its River job ends; nothing ran, and
// other runs are unaffected once claims work.
func TestClaim_ClaimThatKeepsFailingEndsTheRunAsError(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		h, calls := completing(d)
		cfg := testCfg() // 3 attempts
		q := openQueueWith(t, d, cfg, h, func(q *queue.Queue) {
			if err := q.FailClaims(ctx, true); err != nil {
				t.Fatal(err)
			}
		})
		enqueue(t, q, "neverclaimed")
		waitForDescribed(t, "the run that cannot be claimed failed", func() bool {
			return jobOf(t, q, "neverclaimed").Status == queue.StatusFailed
		}, func() string {
			j := jobOf(t, q, "neverclaimed")
			e, _ := q.EngineJobs(ctx, "neverclaimed")
			return fmt.Sprint(*j, e)
		})
		jobs, _, err := q.List(ctx, queue.Filter{Status: queue.StatusFailed, Limit: 20, Page: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) != 1 || jobs[0].ID != "neverclaimed" || !strings.Contains(jobs[0].Error, "injected claim failure") {
			t.Errorf("failed jobs listed: %+v; want neverclaimed with the claim's error", jobs)
		}
		// The run's row follows its job's (as after a failed attempt).
		waitFor(t, "the run row ERROR", func() bool { return runStatus(t, d, "neverclaimed") != run.StatusPending })
		r, err := d.GetRun(ctx, "neverclaimed")
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.Output()
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != run.StatusError || !strings.Contains(fmt.Sprint(out.Content), "injected claim failure") {
			t.Errorf("run row %s (%v), want ERROR with the claim's error", out.Status, out.Content)
		}
		waitForEngineJobs(t, q, "neverclaimed", "the River job to end", func(engine []queue.EngineJob) bool {
			return len(engine) == 1 && ended(engine[0])
		})
		if err := q.FailClaims(ctx, false); err != nil {
			t.Fatal(err)
		}
		enqueue(t, q, "other")
		waitFor(t, "another run completed", func() bool { return jobOf(t, q, "other").Status == queue.StatusCompleted })
		if n := calls.Load(); n != 1 {
			t.Errorf("the handler ran %d times, want 1 (the other run only)", n)
		}
		if st := runStatus(t, d, "neverclaimed"); st != run.StatusError {
			t.Errorf("the failed run's row is %s afterwards, want ERROR", st)
		}
	})
}
