package queue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// A server that stops before its running runs finish (Stop's deadline
// passes) cancels them, but their CANCELLED save is refused: the run and its
// job stay RUNNING for recovery, and the restarted node resumes them.
func TestStop_RunningRunIsLeftForRecoveryNotCancelled(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		cfg := testCfg()
		cfg.LockGrace = time.Hour // only the start-up recovery may resume it
		cfg.NodeID = "stopping"
		started, wrote := make(chan int, 4), make(chan error, 4)
		q, err := queue.Open(context.Background(), d, cfg, blockUntilCancelled(d, started, wrote))
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		s, r, j := pending("stop1", "u1")
		if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		<-started
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_ = q.Stop(ctx) // the deadline passes: the run is cancelled
		cancel()
		select {
		case err := <-wrote:
			if !errors.Is(err, run.ErrFenced) {
				t.Fatalf("the stopped run's CANCELLED save: %v, want run.ErrFenced", err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("the running run was not stopped")
		}
		if st := runStatus(t, d, "stop1"); st != run.StatusRunning {
			t.Fatalf("run is %s after the stop, want RUNNING (left for recovery)", st)
		}

		cfgB := cfg
		cfgB.NodeID = "restarted"
		cfgB.SingleNode = true
		b := openQueue(t, d, cfgB, complete(d))
		waitFor(t, "resumed at start", func() bool { return jobOf(t, b, "stop1").Status == queue.StatusCompleted })
		if st := runStatus(t, d, "stop1"); st != run.StatusCompleted {
			t.Fatalf("run is %s after the restart, want COMPLETED", st)
		}
	})
}
