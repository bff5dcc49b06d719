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

// liveCorruptRun stores a RUNNING run, outside the queue, whose run_data
// cannot be decoded (db.ErrCorruptRow on any read of the whole row).
func liveCorruptRun(t *testing.T, q *queue.Queue, d *db.DB, id string) {
	t.Helper()
	ctx := context.Background()
	out := &run.Output{RunID: id, SessionID: "s-" + id, AgentID: "a1", UserID: "u1", Status: run.StatusRunning, CreatedAt: time.Now().Unix()}
	row, err := db.RunFromOutput(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d.SaveRun(ctx, &db.Session{SessionID: out.SessionID, SessionType: run.TypeAgent, AgentID: "a1", UserID: "u1"}, row); err != nil {
		t.Fatal(err)
	}
	if err := q.CorruptRunData(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := d.GetRun(ctx, id); !errors.Is(err, db.ErrCorruptRow) {
		t.Fatalf("the corrupted run reads back with %v, want db.ErrCorruptRow", err)
	}
}

// The start's repair listed the live runs (PENDING or RUNNING) as whole
// rows, run_data included, only for their ids: one run whose run_data
// could not be decoded failed the listing, and no run left behind its
// failed job was moved. It now reads their ids and statuses only.
func TestRepair_StartReadsStatusesNotRunData(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		poison := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			return "", queue.Permanent(errors.New("poison payload"))
		}
		refused := make(chan struct{}, 1)
		a, err := queue.Open(ctx, d, testCfg(), poison)
		if err != nil {
			t.Fatal(err)
		}
		a.RepairEvery(time.Hour)
		if err := a.RefuseRunStatus(ctx, run.StatusError, true); err != nil {
			t.Fatal(err)
		}
		a.OnRunStatusRead(func(id string, st run.Status) func(error) {
			return func(err error) {
				if st == run.StatusError && err != nil && !errors.Is(err, queue.ErrMoveSkipped) {
					select {
					case refused <- struct{}{}:
					default:
					}
				}
			}
		})
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		enqueue(t, a, "behind")
		<-refused
		if err := a.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.RefuseRunStatus(ctx, run.StatusError, false); err != nil {
			t.Fatal(err)
		}
		liveCorruptRun(t, a, d, "corrupt")
		openQueueWith(t, d, testCfg(), poison, func(b *queue.Queue) { b.RepairEvery(time.Hour) })
		if st := runStatus(t, d, "behind"); st != run.StatusError {
			t.Errorf("run %s after a queue started beside a corrupt live run, want ERROR (its job failed)", st)
		}
	})
}

// A single node's start marks ERROR the live runs no job holds (cut by a
// crash). It listed them as whole rows: one run whose run_data could not
// be decoded failed the start of the queue. It now lists ids only.
func TestRecovery_SingleNodeStartsBesideACorruptRun(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		cfg := testCfg()
		cfg.SingleNode = true
		q, err := queue.Open(ctx, d, cfg, complete(d))
		if err != nil {
			t.Fatal(err)
		}
		liveCorruptRun(t, q, d, "corrupt")
		orphan := &run.Output{RunID: "stream1", SessionID: "s-corrupt", AgentID: "a1", UserID: "u1", Status: run.StatusRunning, CreatedAt: time.Now().Unix()}
		row, err := db.RunFromOutput(orphan)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.UpsertRun(ctx, row); err != nil {
			t.Fatal(err)
		}
		if err := q.Start(ctx); err != nil {
			t.Fatalf("start beside a corrupt run: %v", err)
		}
		t.Cleanup(func() { q.Stop(context.Background()) })
		if st := runStatus(t, d, "stream1"); st != run.StatusError {
			t.Errorf("orphaned run is %s after the start, want ERROR", st)
		}
	})
}

// The pass over paused jobs read each paused run's whole row for its
// status: a run whose run_data could not be decoded ended the pass, and
// the continued runs after it in the batch kept their jobs paused. It
// reads the statuses only.
func TestRepair_PausedPassReadsStatusesNotRunData(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		pause := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			return finishRun(ctx, d, j.ID, run.StatusPaused)
		}
		q := openQueueWith(t, d, testCfg(), pause, func(q *queue.Queue) { q.RepairEvery(time.Hour) })
		enqueue(t, q, "a-corrupt")
		enqueue(t, q, "b-continued")
		waitFor(t, "the jobs paused", func() bool {
			return jobOf(t, q, "a-corrupt").Status == queue.StatusPaused && jobOf(t, q, "b-continued").Status == queue.StatusPaused
		})
		if err := q.CorruptRunData(ctx, "a-corrupt"); err != nil {
			t.Fatal(err)
		}
		if _, err := finishRun(ctx, d, "b-continued", run.StatusCompleted); err != nil {
			t.Fatal(err)
		}
		if err := q.EndContinuedJobs(ctx, 10); err != nil {
			t.Fatal(err)
		}
		if j := jobOf(t, q, "b-continued"); j.Status != queue.StatusCompleted {
			t.Errorf("the continued run's job is %s after a pass, want completed", j.Status)
		}
		if j := jobOf(t, q, "a-corrupt"); j.Status != queue.StatusPaused {
			t.Errorf("the corrupt paused run's job is %s, want paused", j.Status)
		}
	})
}
