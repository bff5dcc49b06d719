package queue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// River's rescuer discards a job running past RescueStuckJobsAfter at its
// last attempt, while the attempt may still be running (its handler
// ignored the job timeout's cancel). River's attempt and max_attempts are
// never below agno_jobs' (the claim copies River's attempt, a snooze is
// not an attempt, Requeue adds the same attempts to both), so the agno
// attempt running then is its last too: whatever it ends with, agno_jobs
// and the run's row agree, and nothing runs it again or leaves it running.
func TestRescue_DiscardAtTheLastAttemptLeavesAgnoConsistent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fail    bool
		job     string
		runWant run.Status
	}{
		{"completes", false, queue.StatusCompleted, run.StatusCompleted},
		{"fails", true, queue.StatusFailed, run.StatusError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachDriver(t, func(t *testing.T, d *db.DB) {
				cfg := testCfg()
				cfg.MaxAttempts = 2
				cfg.Timeout = 200 * time.Millisecond
				var calls atomic.Int32
				started, release := make(chan struct{}), make(chan struct{})
				h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
					if calls.Add(1) == 1 {
						return "", errors.New("the model provider is down")
					}
					close(started)
					<-release // past the job's timeout: its context's cancel is ignored
					if ctx.Err() == nil {
						return "", errors.New("the attempt's context was not cancelled at its timeout")
					}
					if tc.fail {
						return "", errors.New("the model provider is still down")
					}
					return finishRun(ctx, d, j.ID, run.StatusCompleted)
				}
				q := openQueue(t, d, cfg, h)
				var once sync.Once
				free := func() { once.Do(func() { close(release) }) }
				t.Cleanup(free) // before the queue's close: a failed test does not hang
				ctx := context.Background()
				id := "rescued-" + tc.name
				enqueue(t, q, id)
				select {
				case <-started:
				case <-time.After(time.Minute):
					t.Fatalf("the job's second attempt never ran: %+v", jobOf(t, q, id))
				}
				time.Sleep(2 * cfg.Timeout)
				state, err := q.Rescue(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if state != "discarded" {
					t.Fatalf("the rescuer made the River job %s, want discarded (its last attempt)", state)
				}
				free()
				var j *queue.Job
				waitForDescribed(t, "the job to end", func() bool {
					j = jobOf(t, q, id)
					return j.Status != queue.StatusRunning && j.Status != queue.StatusQueued
				}, func() string { return fmt.Sprintf("%+v", j) })
				// Give a wrong retry the time to start.
				time.Sleep(300 * time.Millisecond)
				j = jobOf(t, q, id)
				if j.Status != tc.job || j.Attempt != 2 {
					t.Errorf("agno_jobs says %s at attempt %d, want %s at 2", j.Status, j.Attempt, tc.job)
				}
				// The run's row follows its job's end in a write of its own.
				var st run.Status
				waitForDescribed(t, "the run to end", func() bool {
					st = runStatus(t, d, id)
					return st != run.StatusRunning && st != run.StatusPending
				}, func() string { return string(st) })
				if st != tc.runWant {
					t.Errorf("the run is %s, want %s", st, tc.runWant)
				}
				if n := calls.Load(); n != 2 {
					t.Errorf("the handler ran %d times, want 2", n)
				}
				engine, err := q.EngineJobs(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if len(engine) != 1 || engine[0].State != "discarded" {
					t.Errorf("River jobs %v, want the one discarded", engine)
				}
			})
		})
	}
}
