package runlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// Retention keeps the log of a run whose job the queue will still run (a
// retry waiting, or running), however old its last, final event (the
// earlier attempt's RunError): the next attempt's events follow it in the
// numbering, and a client resuming with an index of the earlier attempt
// gets the rest of it, then the next attempt's events. Deleted, the next
// attempt numbered its events from 0 again, under the indexes clients
// already held. The logs of runs whose job is final, or that have none,
// expire as before.
func TestDeleteBefore_KeepsTheLogOfARunItsQueueWillRunAgain(t *testing.T) {
	eachStore(t, queueStores, func(t *testing.T, d *db.DB, l *runlog.Log) {
		ctx := context.Background()
		q, err := queue.Open(ctx, d, queue.Config{MaxAttempts: 3}, func(context.Context, *queue.Job) (run.Status, error) {
			return run.StatusCompleted, nil
		}) // not started: jobs stay as written
		if err != nil {
			t.Fatal(err)
		}
		w := d.Driver().(db.SQLWriter).SQLWriter()
		jobs := map[string]string{"run-retry-waits": queue.StatusQueued, "run-retry-runs": queue.StatusRunning, "run-done": queue.StatusCompleted, "run-failed": queue.StatusFailed}
		for id, status := range jobs {
			enqueue(t, q, id)
			if _, err := w.DB.ExecContext(ctx, `UPDATE `+table(d, "agno_jobs")+` SET status = '`+status+`' WHERE id = '`+id+`'`); err != nil {
				t.Fatal(err)
			}
		}
		ev := func(name run.EventType) runlog.Pending {
			return runlog.Pending{Event: string(name), Data: []byte(`{"event":"` + string(name) + `"}`), Final: run.IsTerminal(name)}
		}
		attempt1 := []runlog.Pending{ev(run.EventRunStarted), ev(run.EventRunContent), ev(run.EventRunError)}
		for _, id := range []string{"run-retry-waits", "run-retry-runs", "run-done", "run-failed", "run-no-job"} {
			if err := l.Append(ctx, id, 1, attempt1, nil); err != nil {
				t.Fatal(err)
			}
		}
		// Attempt 1 failed two hours ago; the retention is one hour.
		if _, err := w.DB.ExecContext(ctx, `UPDATE `+table(d, runlog.Table)+` SET created_at = created_at - 7200`); err != nil {
			t.Fatal(err)
		}
		now := time.Now().Unix()
		n, err := l.DeleteBefore(ctx, now-3600, now-7*3600)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"run-retry-waits", "run-retry-runs"} {
			if c, err := l.Count(ctx, id); err != nil || c != 3 {
				t.Errorf("%s (job %s): %d events left (%v), want attempt 1's 3", id, jobs[id], c, err)
			}
		}
		for _, id := range []string{"run-done", "run-failed", "run-no-job"} {
			if c, err := l.Count(ctx, id); err != nil || c != 0 {
				t.Errorf("%s: %d events left (%v), want none", id, c, err)
			}
		}
		if n != 9 {
			t.Errorf("deleted %d events, want the 9 of the runs whose job is final or that have none", n)
		}

		// Attempt 2 runs; a client holding attempt 1's RunContent (index 1)
		// resumes.
		if err := l.Append(ctx, "run-retry-waits", 2, []runlog.Pending{ev(run.EventRunStarted), ev(run.EventRunCompleted)}, nil); err != nil {
			t.Fatal(err)
		}
		got, err := l.Read(ctx, "run-retry-waits", 1, 10)
		if err != nil {
			t.Fatal(err)
		}
		want := []struct {
			seq     int64
			attempt int
			event   run.EventType
		}{{2, 1, run.EventRunError}, {3, 2, run.EventRunStarted}, {4, 2, run.EventRunCompleted}}
		if len(got) != len(want) {
			t.Fatalf("resumed after index 1: %+v, want attempt 1's RunError then attempt 2's events", got)
		}
		for i, w := range want {
			if got[i].Seq != w.seq || got[i].Attempt != w.attempt || got[i].Event != string(w.event) {
				t.Fatalf("resumed after index 1: event %d is %+v, want %+v", i, got[i], w)
			}
		}
	})
}
