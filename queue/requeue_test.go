package queue_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// The failed lease of a streamed run whose node died cannot be requeued:
// no engine job dispatches it and it holds no request to run, so queued it
// would wait forever with its run PENDING. The requeue is refused and
// changes nothing.
func TestRequeue_ForegroundLeaseIsRefused(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		cfg := testCfg()
		cfg.LockGrace = time.Second
		cfg.PollInterval = 100 * time.Millisecond
		cfg.NodeID = "node-a"
		a := openQueue(t, d, cfg, complete(d))
		cfgB := cfg
		cfgB.NodeID = "node-b"
		b := openQueue(t, d, cfgB, complete(d))

		if _, _, err := a.Hold(context.Background(), storeRunning(t, d, "streamed")); err != nil {
			t.Fatal(err)
		}
		a.Hang()
		waitFor(t, "node B fails the hung node's lease", func() bool { return jobOf(t, b, "streamed").Status == queue.StatusFailed })
		waitFor(t, "the run marked ERROR", func() bool { return storedRunStatus(t, d, "streamed") == run.StatusError })

		if j, err := b.Requeue(context.Background(), "streamed"); !errors.Is(err, queue.ErrNotRequeueable) {
			t.Fatalf("requeue of a streamed run's lease: %+v, %v; want ErrNotRequeueable", j, err)
		}
		if j := jobOf(t, b, "streamed"); j.Status != queue.StatusFailed {
			t.Errorf("the refused requeue left the job %s", j.Status)
		}
		if st := storedRunStatus(t, d, "streamed"); st != run.StatusError {
			t.Errorf("the refused requeue left the run %s", st)
		}
	})
}

// A requeue's job and run are one write: with the run's move back to
// PENDING refused, the job was queued all the same (the run's move was a
// second write, logged), and its claim, finding the run ERROR, ended the
// job failed again without running it and without a reason. The requeue
// now fails as a whole and changes nothing; once the database takes the
// write, a requeue runs the run again.
func TestRequeue_RefusedRunWriteRefusesTheRequeue(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		var poisoned atomic.Bool
		poisoned.Store(true)
		var calls atomic.Int32
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			calls.Add(1)
			if poisoned.Load() {
				return "", queue.Permanent(errors.New("poison payload"))
			}
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		}
		q := openQueue(t, d, testCfg(), h)
		enqueue(t, q, "requeued")
		waitFor(t, "the run failed", func() bool {
			return jobOf(t, q, "requeued").Status == queue.StatusFailed && runStatus(t, d, "requeued") == run.StatusError
		})
		poisoned.Store(false)
		if err := q.RefuseRunStatus(ctx, run.StatusPending, true); err != nil {
			t.Fatal(err)
		}
		if j, err := q.Requeue(ctx, "requeued"); err == nil {
			t.Fatalf("requeue with the run's write refused: %+v, want an error", j)
		}
		if j := jobOf(t, q, "requeued"); j.Status != queue.StatusFailed || !strings.Contains(j.Error, "poison payload") {
			t.Errorf("after the refused requeue the job is %s (%q), want failed with its reason", j.Status, j.Error)
		}
		if st := runStatus(t, d, "requeued"); st != run.StatusError {
			t.Errorf("after the refused requeue the run is %s, want ERROR", st)
		}
		if err := q.RefuseRunStatus(ctx, run.StatusPending, false); err != nil {
			t.Fatal(err)
		}
		if _, err := q.Requeue(ctx, "requeued"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the requeued run completed", func() bool { return jobOf(t, q, "requeued").Status == queue.StatusCompleted })
		if st := runStatus(t, d, "requeued"); st != run.StatusCompleted {
			t.Errorf("run %s, want COMPLETED", st)
		}
		if n := calls.Load(); n != 2 {
			t.Errorf("the handler ran %d times, want 2", n)
		}
	})
}

// Requeue built the run's PENDING row from a read taken before its
// transaction: a change of the run's row committed in between (here its
// metadata, written by another connection) was overwritten by the
// requeue's write. The transaction now reads the row again and starts
// over when it changed: the change is kept.
func TestRequeue_KeepsAChangeOfTheRunCommittedDuringTheRequeue(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		var first atomic.Bool
		first.Store(true)
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			if first.Swap(false) {
				return "", queue.Permanent(errors.New("poison payload"))
			}
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		}
		var changed atomic.Bool
		q := openQueueWith(t, d, testCfg(), h, func(q *queue.Queue) {
			q.OnRequeueRead(func(id string) {
				if changed.Swap(true) {
					return
				}
				// Another writer's change of the row, committed between
				// the requeue's read and its transaction.
				row, err := d.GetRun(ctx, id)
				if err != nil {
					t.Error(err)
					return
				}
				out, err := row.Output()
				if err != nil {
					t.Error(err)
					return
				}
				out.Metadata = map[string]any{"note": "written during the requeue"}
				next, err := db.RunFromOutput(out)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := d.UpsertRun(ctx, next); err != nil {
					t.Error(err)
				}
			})
		})
		enqueue(t, q, "changed")
		waitFor(t, "the run to end ERROR", func() bool {
			return jobOf(t, q, "changed").Status == queue.StatusFailed && runStatus(t, d, "changed") == run.StatusError
		})
		if _, err := q.Requeue(ctx, "changed"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the requeued run to complete", func() bool { return jobOf(t, q, "changed").Status == queue.StatusCompleted })
		row, err := d.GetRun(ctx, "changed")
		if err != nil {
			t.Fatal(err)
		}
		out, err := row.Output()
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != run.StatusCompleted || out.Metadata["note"] != "written during the requeue" {
			t.Errorf("run %s with metadata %v, want COMPLETED with the change written during the requeue", out.Status, out.Metadata)
		}
	})
}

// A failed attempt's end is two writes: the job failed, then its run
// ERROR. A Requeue committed between them (the job queued again, the run
// PENDING) was overwritten by the second, unfenced: the run ERROR behind a
// queued job, whose claim then found the run final and failed the job
// again without running it. The move is now fenced on the job still being
// failed at that attempt: the requeue stands and the run runs again.
func TestRequeue_BetweenAFailedJobAndItsRunsErrorStands(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		var first atomic.Bool
		first.Store(true)
		h := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			if first.Swap(false) {
				return "", queue.Permanent(errors.New("poison payload"))
			}
			return finishRun(ctx, d, j.ID, run.StatusCompleted)
		}
		var requeued atomic.Bool
		q := openQueueWith(t, d, testCfg(), h, func(qq *queue.Queue) {
			qq.OnRunStatusRead(func(id string, st run.Status) func(error) {
				if id != "between" || st != run.StatusError || requeued.Swap(true) {
					return nil
				}
				// The job is failed, its run's ERROR read and not written
				// yet: the requeue commits here.
				if _, err := qq.Requeue(ctx, id); err != nil {
					t.Errorf("requeue between the job's end and its run's: %v", err)
				}
				return nil
			})
		})
		enqueue(t, q, "between")
		waitForDescribed(t, "the requeued run to end", func() bool {
			j := jobOf(t, q, "between")
			return requeued.Load() && (j.Status == queue.StatusCompleted || j.Status == queue.StatusFailed && j.Attempt >= 2 ||
				j.Status == queue.StatusFailed && strings.Contains(j.Error, "before its job recorded it"))
		}, func() string { j := jobOf(t, q, "between"); return j.Status + " " + j.Error })
		j := jobOf(t, q, "between")
		if j.Status != queue.StatusCompleted || runStatus(t, d, "between") != run.StatusCompleted {
			t.Errorf("job %s (%q), run %s after a requeue between the job's end and its run's, want both completed", j.Status, j.Error, runStatus(t, d, "between"))
		}
	})
}
