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

// Cancel of a queued or paused job wrote the run's CANCELLED row built
// from a read taken before its transaction: a paused run continued to its
// end in between (its continue route writes the run row only; the job
// stays paused) lost its end, overwritten by the stale row marked
// CANCELLED. The transaction now checks the run's row is the one read,
// else starts over from a new read: the continued run keeps its end.
func TestCancel_KeepsARunContinuedToItsEndDuringTheCancel(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		pause := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			return finishRun(ctx, d, j.ID, run.StatusPaused)
		}
		var continued atomic.Bool
		q := openQueueWith(t, d, testCfg(), pause, func(q *queue.Queue) {
			q.RepairEvery(time.Hour)
			q.OnCancelRead(func(id string) {
				if continued.Swap(true) {
					return
				}
				// The continue route's end of the run, between the
				// cancel's read and its transaction.
				if _, err := finishRun(ctx, d, id, run.StatusCompleted); err != nil {
					t.Error(err)
				}
			})
		})
		enqueue(t, q, "continued")
		waitFor(t, "the job paused", func() bool { return jobOf(t, q, "continued").Status == queue.StatusPaused })
		if _, err := q.Cancel(ctx, "continued"); err != nil {
			t.Fatal(err)
		}
		row, err := d.GetRun(ctx, "continued")
		if err != nil {
			t.Fatal(err)
		}
		out, err := row.Output()
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != run.StatusCompleted || fmt.Sprint(out.Content) != "done" {
			t.Errorf("run %s (%q) after a cancel that raced its continued end, want COMPLETED (done)", out.Status, out.Content)
		}
	})
}
