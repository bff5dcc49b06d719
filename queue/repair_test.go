package queue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// A failed run's end is two writes: the job row failed, then the run row
// ERROR. When the database took the first and refused the second, the run
// stayed PENDING (RUNNING) behind its failed job for good on Postgres
// (only a restarted single SQLite node marked it ERROR, with "the server
// stopped" as its reason). The lease loop now moves such a run to its
// job's end, with the job's reason, once the database takes the write.
func TestRepair_RunLeftBehindItsFailedJobEndsAsError(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		poison := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			return "", queue.Permanent(errors.New("poison payload"))
		}
		refused := make(chan struct{}, 1)
		q := openQueueWith(t, d, testCfg(), poison, func(q *queue.Queue) {
			q.RepairEvery(50 * time.Millisecond)
			if err := q.RefuseRunStatus(ctx, run.StatusError, true); err != nil {
				t.Fatal(err)
			}
			q.OnRunStatusRead(func(id string, st run.Status) func(error) {
				if id != "leftbehind" || st != run.StatusError {
					return nil
				}
				return func(err error) {
					if err != nil && !errors.Is(err, queue.ErrMoveSkipped) {
						select {
						case refused <- struct{}{}:
						default:
						}
					}
				}
			})
		})
		enqueue(t, q, "leftbehind")
		<-refused // the run's ERROR was refused after its job failed
		if j := jobOf(t, q, "leftbehind"); j.Status != queue.StatusFailed {
			t.Fatalf("job %s, want failed", j.Status)
		}
		if err := q.RefuseRunStatus(ctx, run.StatusError, false); err != nil {
			t.Fatal(err)
		}
		waitForDescribed(t, "the run row to follow its failed job", func() bool {
			return runStatus(t, d, "leftbehind") == run.StatusError
		}, func() string { return fmt.Sprint(runStatus(t, d, "leftbehind")) })
		r, err := d.GetRun(ctx, "leftbehind")
		if err != nil {
			t.Fatal(err)
		}
		out, err := r.Output()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(fmt.Sprint(out.Content), "poison payload") {
			t.Errorf("run content %q, want the job's reason", out.Content)
		}
	})
}

// A run left behind its failed job by a process that stopped before its
// lease loop looked again is moved when a queue starts (any replica, any
// dialect), before it dispatches anything.
func TestRepair_StartMovesARunLeftBehindItsFailedJob(t *testing.T) {
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
		enqueue(t, a, "stopped")
		<-refused
		if err := a.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if err := a.RefuseRunStatus(ctx, run.StatusError, false); err != nil {
			t.Fatal(err)
		}
		if st := runStatus(t, d, "stopped"); st == run.StatusError {
			t.Fatalf("run %s before the restart; the test needs it left behind", st)
		}
		openQueueWith(t, d, testCfg(), poison, func(b *queue.Queue) { b.RepairEvery(time.Hour) })
		if st := runStatus(t, d, "stopped"); st != run.StatusError {
			t.Errorf("run %s after a queue started, want ERROR (its job failed)", st)
		}
	})
}

// A paused background run is continued outside the queue (its continue
// or approval route runs it in the request and writes the run row only):
// its job stayed paused for good, listed and counted as paused and never
// deleted by retention, which keeps paused jobs. Once its run has ended,
// the job takes the run's end.
func TestRepair_PausedJobOfAContinuedRunEnds(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		pause := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			return finishRun(ctx, d, j.ID, run.StatusPaused)
		}
		q := openQueueWith(t, d, testCfg(), pause, func(q *queue.Queue) { q.RepairEvery(50 * time.Millisecond) })
		enqueue(t, q, "continued")
		enqueue(t, q, "waiting")
		waitFor(t, "the jobs paused", func() bool {
			return jobOf(t, q, "continued").Status == queue.StatusPaused && jobOf(t, q, "waiting").Status == queue.StatusPaused
		})
		// The continue route's end of the run, outside the queue.
		if _, err := finishRun(ctx, d, "continued", run.StatusCompleted); err != nil {
			t.Fatal(err)
		}
		waitForDescribed(t, "the continued run's job to end", func() bool {
			return jobOf(t, q, "continued").Status == queue.StatusCompleted
		}, func() string { return jobOf(t, q, "continued").Status })
		if j := jobOf(t, q, "continued"); j.CompletedAt == 0 {
			t.Errorf("the ended job has no completed_at (retention would keep it for good)")
		}
		if j := jobOf(t, q, "waiting"); j.Status != queue.StatusPaused {
			t.Errorf("the job of a run still paused is %s, want paused", j.Status)
		}
		st, err := q.Stats(ctx, "", false)
		if err != nil {
			t.Fatal(err)
		}
		if st.Paused != 1 || st.Completed != 1 {
			t.Errorf("stats %+v, want one job completed, one paused", st)
		}
	})
}

// A pass over the paused jobs looks at a batch of them, after the last one
// the pass before looked at: a process reads a bounded number of run rows
// a period however many runs wait for an approval, and every continued
// run's job still ends, within a pass per batch.
func TestRepair_PausedJobsAreLookedAtABatchAPass(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		pause := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			return finishRun(ctx, d, j.ID, run.StatusPaused)
		}
		q := openQueueWith(t, d, testCfg(), pause, func(q *queue.Queue) { q.RepairEvery(time.Hour) })
		ids := []string{"c0", "c1", "c2", "c3", "c4", "w"}
		for _, id := range ids {
			enqueue(t, q, id)
		}
		waitFor(t, "the jobs paused", func() bool {
			for _, id := range ids {
				if jobOf(t, q, id).Status != queue.StatusPaused {
					return false
				}
			}
			return true
		})
		for _, id := range ids[:5] {
			if _, err := finishRun(ctx, d, id, run.StatusCompleted); err != nil {
				t.Fatal(err)
			}
		}
		ended := func() (n int) {
			for _, id := range ids[:5] {
				if jobOf(t, q, id).Status == queue.StatusCompleted {
					n++
				}
			}
			return n
		}
		for pass, want := range []int{2, 4, 5, 5} {
			if err := q.EndContinuedJobs(ctx, 2); err != nil {
				t.Fatal(err)
			}
			if got := ended(); got != want {
				t.Fatalf("after pass %d: %d continued runs' jobs ended, want %d", pass+1, got, want)
			}
		}
		if j := jobOf(t, q, "w"); j.Status != queue.StatusPaused {
			t.Errorf("the job of a run still paused is %s, want paused", j.Status)
		}
	})
}

// The periodic look at ended jobs reads the run of a job it found with
// nothing to move once, not at every look of its ten-minute window: a
// burst of failed runs was read again ten times. A run left behind (its
// move refused) is read again at every look until it moves.
func TestRepair_AnEndedJobsSettledRunIsReadOnce(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		ctx := context.Background()
		poison := func(ctx context.Context, j *queue.Job) (run.Status, error) {
			return "", queue.Permanent(errors.New("poison payload"))
		}
		q := openQueueWith(t, d, testCfg(), poison, func(q *queue.Queue) { q.RepairEvery(time.Hour) })
		enqueue(t, q, "settled")
		waitFor(t, "the run to end ERROR", func() bool { return runStatus(t, d, "settled") == run.StatusError })
		reads := map[string]int{}
		for range 3 {
			if err := q.RepairEndedRuns(ctx, func(id string) { reads[id]++ }); err != nil {
				t.Fatal(err)
			}
		}
		if reads["settled"] != 1 {
			t.Errorf("the settled run was read %d times in three looks, want once", reads["settled"])
		}
		// A run behind its failed job is read at every look.
		if err := q.RefuseRunStatus(ctx, run.StatusError, true); err != nil {
			t.Fatal(err)
		}
		enqueue(t, q, "behind")
		waitFor(t, "the job to fail", func() bool { return jobOf(t, q, "behind").Status == queue.StatusFailed })
		for range 2 {
			if err := q.RepairEndedRuns(ctx, func(id string) { reads[id]++ }); err != nil {
				t.Fatal(err)
			}
		}
		if reads["behind"] != 2 {
			t.Errorf("the run left behind was read %d times in two looks, want at each", reads["behind"])
		}
		if err := q.RefuseRunStatus(ctx, run.StatusError, false); err != nil {
			t.Fatal(err)
		}
		if err := q.RepairEndedRuns(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if st := runStatus(t, d, "behind"); st != run.StatusError {
			t.Errorf("the run left behind is %s after a look with the write allowed, want ERROR", st)
		}
	})
}
