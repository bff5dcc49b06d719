package runlog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/runlog"
)

// Subscribers read through the store's reader pool: on SQLite a write that
// holds the single writer connection (a group of run writes, a stalled
// append) does not hold up their polls, and their polls do not queue in
// front of the process's writes.
func TestRead_DoesNotWaitForTheWriterConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdbs.SQLite(t)
	l, err := runlog.Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	const runID = "run-read"
	rec := l.Record(ctx, runID, 1, nil)
	rec.Add(content(runID, 0))
	rec.Add(completed(runID))
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	st, ok := sqlstore.FromDB(d)
	if !ok {
		t.Fatal("not a sqlstore")
	}
	conn, err := st.SQL().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.BeginTx(ctx, nil) // holds the writer connection and the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	defer tx.Rollback()
	// Bounds a read that waits for the writer (the defect) so the test
	// fails instead of hanging; a read from the reader pool takes
	// milliseconds.
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	recs, err := l.Read(rctx, runID, -1, 10)
	if err != nil || len(recs) != 2 {
		t.Fatalf("read while a write holds the writer: %d events (%v)", len(recs), err)
	}
	if n, err := l.Count(rctx, runID); err != nil || n != 2 {
		t.Fatalf("count while a write holds the writer: %d (%v)", n, err)
	}
	if last, ok, err := l.Last(rctx, runID); err != nil || !ok || !last.Final {
		t.Fatalf("last while a write holds the writer: %+v %v (%v)", last, ok, err)
	}
}

// Two processes (two handles on one database) record runs and tail them
// at once: every run's log holds all its events, numbered without gap.
func TestRecord_TwoProcessesConcurrentlyDropNothing(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		const runs, events = 4, 200
		var wg sync.WaitGroup
		for i := range runs {
			for p, l := range []*runlog.Log{a, b} {
				runID := fmt.Sprintf("run-%d-%d", p, i)
				wg.Go(func() {
					rec := l.Record(context.Background(), runID, 1, nil)
					for k := range events {
						rec.Add(content(runID, k))
					}
					rec.Add(completed(runID))
					if err := rec.Close(); err != nil {
						t.Error(runID, err)
					}
				})
				// A subscriber on the other process follows it live.
				other := []*runlog.Log{b, a}[p]
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					var n int64
					for r, err := range other.Tail(ctx, runID, -1, oneAttempt(other, runID), fast) {
						if err != nil {
							t.Error(runID, err)
							return
						}
						if r.Seq == runlog.Idle {
							continue
						}
						if r.Seq != n {
							t.Errorf("%s: event %d has seq %d", runID, n, r.Seq)
							return
						}
						n++
					}
					if n != events+1 {
						t.Errorf("%s: followed %d events, want %d", runID, n, events+1)
					}
				})
			}
		}
		wg.Wait()
	})
}
