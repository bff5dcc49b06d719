package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// A run id enqueued again after its session was deleted runs attempt 1
// again, under another engine job. The deleted run's attempt 1, still
// running (on another node, or with a step under way), records journal
// steps at the same attempt number: the journal's own fence (an attempt)
// cannot tell it from the new run's. Its journal writes are refused from
// the delete on, before the new claim (no job row) and after it (another
// engine job), and the new run's replay never sees them. Heartbeats are
// stopped: nothing but the fences can tell the old attempt.
func TestJournal_DeletedRunsAttemptCannotWriteIntoTheNewRunsJournal(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		var q *queue.Queue
		var calls atomic.Int32
		firstIn, deleted, claimed := make(chan struct{}), make(chan struct{}), make(chan struct{})
		secondIn, secondGo := make(chan struct{}), make(chan struct{})
		lateErr, staleErr := make(chan error, 1), make(chan error, 1)
		type seen struct {
			steps   []db.RunStep
			results map[string]string
			err     error
		}
		secondSaw := make(chan seen, 1)
		step := func(ctx context.Context, j *queue.Job, key, content string) (json.RawMessage, error) {
			// A step under way is not cut short by the claim's cancel.
			return q.Journal().Do(context.WithoutCancel(ctx), run.JournalStep{RunID: j.ID, Key: key, Kind: "tool", Attempt: j.Attempt},
				func(context.Context) (json.RawMessage, error) { return json.RawMessage(`"` + content + `"`), nil })
		}
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			if calls.Add(1) > 1 {
				close(secondIn)
				<-secondGo
				var s seen
				s.steps, s.err = q.Journal().Steps(context.Background(), j.ID)
				s.results = map[string]string{}
				for _, key := range []string{"tool:0", "tool:late", "tool:stale"} {
					res, err := step(ctx, j, key, "new")
					if err != nil && s.err == nil {
						s.err = err
					}
					s.results[key] = string(res)
				}
				secondSaw <- s
				return finishRun(ctx, d, j.ID, run.StatusCompleted)
			}
			if _, err := step(ctx, j, "tool:0", "old"); err != nil {
				return "", err
			}
			close(firstIn)
			<-deleted
			_, err := step(ctx, j, "tool:late", "old")
			lateErr <- err
			<-claimed
			_, err = step(ctx, j, "tool:stale", "old")
			staleErr <- err
			return run.StatusCompleted, errors.Join(err, errors.New("the deleted attempt ends"))
		}
		cfg := testCfg()
		cfg.LockGrace = time.Minute // no lease sweep while heartbeats are stopped
		q = openQueueWith(t, d, cfg, h, func(q *queue.Queue) { q.StopHeartbeats() })
		ctx := context.Background()
		enqueueKeyed(t, q, "gen")
		<-firstIn
		if err := d.DeleteSessions(ctx, "s-gen"); err != nil {
			t.Fatal(err)
		}
		close(deleted)
		if err := <-lateErr; !errors.Is(err, run.ErrFenced) {
			t.Errorf("the deleted attempt recorded a step after the delete: %v, want run.ErrFenced", err)
		}
		enqueueKeyed(t, q, "gen")
		<-secondIn
		close(claimed)
		if err := <-staleErr; !errors.Is(err, run.ErrFenced) {
			t.Errorf("the deleted attempt recorded a step after the new claim: %v, want run.ErrFenced", err)
		}
		close(secondGo)
		got := <-secondSaw
		if got.err != nil {
			t.Fatalf("the new run's journal: %v", got.err)
		}
		if len(got.steps) != 0 {
			t.Errorf("the new run's journal holds the deleted attempt's steps: %+v", got.steps)
		}
		for key, res := range got.results {
			if res != `"new"` {
				t.Errorf("the new run replayed %s = %s from the deleted attempt", key, res)
			}
		}
		waitFor(t, "the new run completed", func() bool { return jobOf(t, q, "gen").Status == queue.StatusCompleted })
		if n := calls.Load(); n != 2 {
			t.Errorf("the handler ran %d times, want 2", n)
		}
	})
}
