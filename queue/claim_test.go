package queue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// A run whose row ended before its job could record it (the process died
// in between) is not handed to the handler again: the claim read the row,
// and the job records the run's status.
func TestClaim_RunAlreadyFinalIsNotExecutedAgain(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		var calls atomic.Int64
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			calls.Add(1)
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		}
		q, err := queue.Open(context.Background(), d, testCfg(), h)
		if err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			id  string
			st  run.Status
			job string
		}{{"fin-c", run.StatusCompleted, queue.StatusCompleted}, {"fin-e", run.StatusError, queue.StatusFailed}, {"fin-x", run.StatusCancelled, queue.StatusCancelled}}
		for _, tc := range cases {
			s, r, j := pending(tc.id, "u1")
			if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
				t.Fatal(err)
			}
			if _, err := finishRun(context.Background(), d, tc.id, tc.st); err != nil {
				t.Fatal(err)
			}
		}
		if err := q.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			q.Stop(ctx)
		})
		for _, tc := range cases {
			waitFor(t, tc.id+" "+tc.job, func() bool { return jobOf(t, q, tc.id).Status == tc.job })
			if st := runStatus(t, d, tc.id); st != tc.st {
				t.Fatalf("run %s is %s, want %s", tc.id, st, tc.st)
			}
		}
		if n := calls.Load(); n != 0 {
			t.Fatalf("the handler ran %d times for runs that had ended", n)
		}
	})
}
