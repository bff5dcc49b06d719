package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// storeRunning writes the RUNNING row a streamed workflow writes at start.
func storeRunning(t *testing.T, d *db.DB, id string) *queue.Job {
	t.Helper()
	s, r, j := pending(id, "u1")
	out, _ := r.Output()
	out.Status = run.StatusRunning
	row, err := db.RunFromOutput(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.SaveRun(context.Background(), s, row); err != nil {
		t.Fatal(err)
	}
	return j
}

// A foreground run's lease is renewed while its node lives (a run three
// times longer than lock_grace is never marked), and once the node hangs
// another node marks the lease failed and the run ERROR after lock_grace.
func TestHold_ForegroundLeaseSweptOnlyWhenItsNodeStops(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		cfg := testCfg()
		cfg.LockGrace = time.Second
		cfg.PollInterval = 100 * time.Millisecond
		a, b := twoNodes(t, d, cfg, complete(d))

		slow := storeRunning(t, d, "slow")
		ctx, done, err := a.Hold(context.Background(), slow)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * cfg.LockGrace)
		if ctx.Err() != nil || jobOf(t, b, "slow").Status != queue.StatusRunning {
			t.Fatalf("a live lease was taken: %v, job %+v", context.Cause(ctx), jobOf(t, b, "slow"))
		}
		if _, err := finishRun(ctx, d, "slow", run.StatusCompleted); err != nil {
			t.Fatalf("the live run's fenced write: %v", err)
		}
		done(run.StatusCompleted)
		if j, err := b.Get(context.Background(), "slow", "", false); !errors.Is(err, queue.ErrNotFound) {
			t.Fatalf("released lease is still there: %+v, %v", j, err)
		}
		if now, _ := a.Running(); now != 0 {
			t.Fatalf("a foreground lease counted as a running job: %d", now)
		}

		doomed := storeRunning(t, d, "doomed")
		dctx, _, err := a.Hold(context.Background(), doomed)
		if err != nil {
			t.Fatal(err)
		}
		a.Hang()
		hung := time.Now()
		waitFor(t, "node B marks the hung node's run ERROR", func() bool { return storedRunStatus(t, d, "doomed") == run.StatusError })
		if since := time.Since(hung); since < cfg.LockGrace-200*time.Millisecond {
			t.Fatalf("marked %s after the hang, before lock_grace", since)
		}
		j := jobOf(t, b, "doomed")
		if j.Status != queue.StatusFailed || j.JobType != queue.JobTypeForeground || !strings.Contains(j.Error, "streamed run") {
			t.Fatalf("swept lease %+v", j)
		}
		// The hung node's late write is fenced: the ERROR stays.
		if _, err := finishRun(dctx, d, "doomed", run.StatusCompleted); !errors.Is(err, run.ErrFenced) {
			t.Fatalf("late write of the swept run: %v", err)
		}
		if st := storedRunStatus(t, d, "doomed"); st != run.StatusError {
			t.Fatalf("run is %s after the late write", st)
		}
	})
}

func storedRunStatus(t *testing.T, d *db.DB, id string) run.Status {
	t.Helper()
	row, err := d.GetRun(context.Background(), id)
	if err != nil {
		return ""
	}
	return row.Status
}
