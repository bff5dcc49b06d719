package runlog_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// stores names the SQL drivers' test databases; queueStores those the
// durable queue runs on.
var (
	stores      = map[string]func(testing.TB) *db.DB{"sqlite": testdbs.SQLite, "postgres": testdbs.Postgres, "mysql": testdbs.MySQL}
	queueStores = map[string]func(testing.TB) *db.DB{"sqlite": testdbs.SQLite, "postgres": testdbs.Postgres}
)

// eachStore runs fn on a fresh database of each driver, with its log.
func eachStore(t *testing.T, drivers map[string]func(testing.TB) *db.DB, fn func(t *testing.T, d *db.DB, l *runlog.Log)) {
	for name, open := range drivers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			l, err := runlog.Open(context.Background(), d)
			if err != nil {
				t.Fatal(err)
			}
			fn(t, d, l)
		})
	}
}

func storeRunIn(t *testing.T, d *db.DB, id string, st run.Status) {
	t.Helper()
	if _, err := d.UpsertSession(context.Background(), &db.Session{SessionID: "s-" + id, SessionType: run.TypeAgent, AgentID: "a1"}); err != nil {
		t.Fatal(err)
	}
	row, err := db.RunFromOutput(&run.Output{RunID: id, SessionID: "s-" + id, AgentID: "a1", Status: st, CreatedAt: time.Now().Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertRun(context.Background(), row); err != nil {
		t.Fatal(err)
	}
}

// table quotes a table of d's store as its dialect does.
func table(d *db.DB, name string) string {
	wp := d.Driver().(db.SQLWriter).SQLWriter()
	switch {
	case wp.Dialect == "mysql":
		return "`" + name + "`"
	case wp.Schema != "":
		return `"` + wp.Schema + `"."` + name + `"`
	}
	return `"` + name + `"`
}

// State reads a run's row status (and its job's status and attempt) on
// every dialect; a run with no row is db.ErrNotFound.
func TestState_ReadsTheRowAndItsJob(t *testing.T) {
	eachStore(t, stores, func(t *testing.T, d *db.DB, l *runlog.Log) {
		ctx := context.Background()
		storeRunIn(t, d, "run-row", run.StatusError)
		st, err := l.State(ctx, "run-row", false)
		if err != nil || st != (runlog.RunState{Status: run.StatusError}) {
			t.Fatalf("state of a row: %+v, %v", st, err)
		}
		if _, err := l.State(ctx, "run-missing", false); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("state of no row: %v, want db.ErrNotFound", err)
		}
		if d.Driver().Dialect() == "mysql" {
			return // the durable queue runs on sqlite and postgres
		}
		q, err := queue.Open(ctx, d, queue.Config{MaxAttempts: 3}, func(context.Context, *queue.Job) (run.Status, error) {
			return run.StatusCompleted, nil
		}) // not started: jobs stay queued
		if err != nil {
			t.Fatal(err)
		}
		if st, err := l.State(ctx, "run-row", true); err != nil || st != (runlog.RunState{Status: run.StatusError}) {
			t.Fatalf("state of a row with no job: %+v, %v", st, err)
		}
		enqueue(t, q, "run-job")
		st, err = l.State(ctx, "run-job", true)
		if err != nil || st.Status != run.StatusPending || !st.Job || st.JobStatus != queue.StatusQueued {
			t.Fatalf("state of a queued run: %+v, %v", st, err)
		}
		if _, err := l.State(ctx, "run-missing", true); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("state of no row: %v, want db.ErrNotFound", err)
		}
	})
}

func enqueue(t *testing.T, q *queue.Queue, id string) {
	t.Helper()
	sess := &db.Session{SessionID: "s-" + id, SessionType: run.TypeAgent, AgentID: "a1"}
	row, err := db.RunFromOutput(&run.Output{RunID: id, SessionID: sess.SessionID, AgentID: "a1", Status: run.StatusPending, CreatedAt: time.Now().Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := q.Enqueue(context.Background(), sess, row, &queue.Job{ID: id, ComponentType: "agent", ComponentID: "a1", SessionID: sess.SessionID}); err != nil {
		t.Fatal(err)
	}
}

// The row and the job State reads are one snapshot: while a writer moves
// both in one transaction (a retried attempt's ERROR row with its job
// queued again, then the next attempt's COMPLETED row with its job
// completed), every read pairs them as written. Two reads paired a stale
// row with the job's later outcome.
func TestState_PairsTheRowAndTheJobOfOneCommit(t *testing.T) {
	eachStore(t, queueStores, func(t *testing.T, d *db.DB, l *runlog.Log) {
		ctx := context.Background()
		q, err := queue.Open(ctx, d, queue.Config{MaxAttempts: 3}, func(context.Context, *queue.Job) (run.Status, error) {
			return run.StatusCompleted, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		const id = "run-flip"
		enqueue(t, q, id)
		w := d.Driver().(db.SQLWriter).SQLWriter()
		runs, jobs := table(d, "agno_runs"), table(d, "agno_jobs")
		ph := func(n int) string {
			if w.Dialect == "postgres" {
				return fmt.Sprintf("$%d", n)
			}
			return "?"
		}
		states := [][2]string{{string(run.StatusError), queue.StatusQueued}, {string(run.StatusCompleted), queue.StatusCompleted}}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s := states[i%2]
				tx, err := w.DB.BeginTx(ctx, nil)
				if err != nil {
					t.Error(err)
					return
				}
				_, err1 := tx.ExecContext(ctx, `UPDATE `+runs+` SET status = `+ph(1)+` WHERE run_id = `+ph(2), s[0], id)
				_, err2 := tx.ExecContext(ctx, `UPDATE `+jobs+` SET status = `+ph(1)+` WHERE id = `+ph(2), s[1], id)
				if err := errors.Join(err1, err2, tx.Commit()); err != nil {
					t.Error(err)
					return
				}
			}
		})
		defer wg.Wait()
		defer close(stop)
		for range 400 {
			st, err := l.State(ctx, id, true)
			if err != nil {
				t.Fatal(err)
			}
			pair := [2]string{string(st.Status), st.JobStatus}
			if pair != states[0] && pair != states[1] && pair != [2]string{string(run.StatusPending), queue.StatusQueued} { // as enqueued
				t.Fatalf("read row %s with job %s: never written together", pair[0], pair[1])
			}
		}
	})
}
