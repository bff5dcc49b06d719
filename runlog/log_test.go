package runlog_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// eachSQL runs fn on two handles (two processes) of one fresh database of
// every SQL driver.
func eachSQL(t *testing.T, fn func(t *testing.T, a, b *runlog.Log)) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			da, dbb := testdbs.AllTwins[name](t)
			ctx := context.Background()
			a, err := runlog.Open(ctx, da)
			if err != nil {
				t.Fatal(err)
			}
			b, err := runlog.Open(ctx, dbb)
			if err != nil {
				t.Fatal(err)
			}
			fn(t, a, b)
		})
	}
}

func content(runID string, i int) run.Event {
	return run.Event{Event: run.EventRunContent, RunID: runID, Content: fmt.Sprintf("c%d", i)}
}

func completed(runID string) run.Event {
	return run.Event{Event: run.EventRunCompleted, RunID: runID}
}

func never(context.Context) (runlog.End, error) { return runlog.End{}, nil }

// oneAttempt is the ended func of a run with one attempt: it is over once
// its final event is stored (its row is final and nothing retries it).
func oneAttempt(l *runlog.Log, runID string) func(context.Context) (runlog.End, error) {
	return func(ctx context.Context) (runlog.End, error) {
		last, ok, err := l.Last(ctx, runID)
		return runlog.End{Over: ok && last.Final}, err
	}
}

var fast = runlog.TailConfig{Poll: 20 * time.Millisecond, Grace: 100 * time.Millisecond}

// collect tails from after and stops after n events (n < 0: to the end).
func collect(t *testing.T, l *runlog.Log, runID string, after int64, n int, ended func(context.Context) (runlog.End, error)) []runlog.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []runlog.Record
	for r, err := range l.Tail(ctx, runID, after, ended, fast) {
		if err != nil {
			t.Fatal(err)
		}
		if r.Seq == runlog.Idle {
			continue
		}
		got = append(got, r)
		if len(got) == n {
			break
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("tail of %s did not end: %d events", runID, len(got))
	}
	return got
}

func checkSeq(t *testing.T, got []runlog.Record, from int64) {
	t.Helper()
	for i, r := range got {
		if r.Seq != from+int64(i) {
			t.Fatalf("event %d has seq %d, want %d", i, r.Seq, from+int64(i))
		}
	}
}

// A run recorded on one replica is followed live on the other; a client
// that disconnects after k events and reconnects from k gets exactly the
// rest, then the end.
func TestTail_OtherReplicaLiveThenResume(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		const n = 300
		runID := "run-live"
		go func() {
			rec := a.Record(context.Background(), runID, 1, nil)
			for i := range n {
				rec.Add(content(runID, i))
				if i%50 == 0 {
					time.Sleep(30 * time.Millisecond)
				}
			}
			rec.Add(completed(runID))
			if err := rec.Close(); err != nil {
				t.Error(err)
			}
		}()
		first := collect(t, b, runID, -1, 120, never)
		checkSeq(t, first, 0)
		rest := collect(t, b, runID, first[len(first)-1].Seq, -1, oneAttempt(b, runID))
		checkSeq(t, rest, 120)
		if len(first)+len(rest) != n+1 {
			t.Fatalf("got %d+%d events, want %d", len(first), len(rest), n+1)
		}
		last := rest[len(rest)-1]
		if !last.Final || last.Event != string(run.EventRunCompleted) {
			t.Fatalf("last event %+v is not the final one", last)
		}
		var ev run.Event
		if err := json.Unmarshal(first[7].Data, &ev); err != nil || ev.Content != "c7" {
			t.Fatalf("event 7 decodes to %+v (%v)", ev, err)
		}
		// Replay of a finished run from the middle.
		again := collect(t, a, runID, 249, -1, oneAttempt(a, runID))
		checkSeq(t, again, 250)
		if len(again) != n+1-250 {
			t.Fatalf("replay from 249: %d events", len(again))
		}
	})
}

// A writer whose fence refuses (its attempt lost the run) stores nothing;
// the owning attempt's events continue the numbering without a gap.
func TestAppend_FencedAttemptStoresNothing(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		ctx := context.Background()
		runID := "run-fenced"
		ev := []runlog.Pending{{Event: "RunContent", Data: []byte(`{"event":"RunContent"}`)}}
		if err := a.Append(ctx, runID, 1, ev, nil); err != nil {
			t.Fatal(err)
		}
		refuse := func(context.Context, *sql.Tx) error { return run.ErrFenced }
		if err := b.Append(ctx, runID, 1, append(ev, ev...), refuse); !errors.Is(err, run.ErrFenced) {
			t.Fatalf("fenced append: %v", err)
		}
		rec := b.Record(db.WithWriteFence(ctx, refuse), runID, 1, nil)
		rec.Add(content(runID, 1))
		if err := rec.Close(); !errors.Is(err, run.ErrFenced) {
			t.Fatalf("fenced recorder: %v", err)
		}
		if err := b.Append(ctx, runID, 2, ev, nil); err != nil {
			t.Fatal(err)
		}
		got, err := a.Read(ctx, runID, -1, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Attempt != 1 || got[1].Attempt != 2 || got[1].Seq != 1 {
			t.Fatalf("log holds %+v", got)
		}
	})
}

// A run that ended without a final event (its process died and the queue
// finished it) ends the tail after the grace period.
func TestTail_EndsWhenRunRowIsFinal(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		runID := "run-cut"
		rec := a.Record(context.Background(), runID, 1, nil)
		rec.Add(content(runID, 0))
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		var over atomic.Bool
		time.AfterFunc(200*time.Millisecond, func() { over.Store(true) })
		got := collect(t, b, runID, -1, -1, func(context.Context) (runlog.End, error) { return runlog.End{Over: over.Load()}, nil })
		if len(got) != 1 {
			t.Fatalf("got %d events", len(got))
		}
	})
}

// Retention deletes finished logs and logs that went stale, nothing else.
func TestDeleteBefore(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		ctx := context.Background()
		for _, id := range []string{"done", "live"} {
			rec := a.Record(ctx, id, 1, nil)
			rec.Add(content(id, 0))
			if id == "done" {
				rec.Add(completed(id))
			}
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
		}
		now := time.Now().Unix()
		if n, err := b.DeleteBefore(ctx, now-60, now-3600); err != nil || n != 0 {
			t.Fatalf("nothing is old yet: deleted %d (%v)", n, err)
		}
		if n, err := b.DeleteBefore(ctx, now+1, now-3600); err != nil || n != 2 {
			t.Fatalf("finished run: deleted %d (%v)", n, err)
		}
		if c, _ := a.Count(ctx, "live"); c != 1 {
			t.Fatalf("live run lost its events: %d", c)
		}
		if n, err := b.DeleteBefore(ctx, now+1, now+1); err != nil || n != 1 {
			t.Fatalf("stale run: deleted %d (%v)", n, err)
		}
	})
}

func TestOpen_MemoryIsRefused(t *testing.T) {
	if _, err := runlog.Open(context.Background(), testdbs.Memory(t)); !errors.Is(err, runlog.ErrUnsupported) {
		t.Fatalf("memory driver: %v", err)
	}
}

// AppendAt stores events at the seq the caller read or not at all: of two
// writers that read the same end of the log (two servers building the
// terminal event of one run from its row), one stores its event and the
// other is told ErrSeqMoved, on either handle; a seq the log has not
// reached is ErrSeqMoved too.
func TestLog_AppendAtStoresOnceAtTheSeqRead(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		ctx := context.Background()
		const runID = "run-append-at"
		if err := a.Append(ctx, runID, 1, []runlog.Pending{{Event: "RunStarted", Data: []byte(`{"event":"RunStarted"}`)}}, nil); err != nil {
			t.Fatal(err)
		}
		end := []runlog.Pending{{Event: "RunError", Data: []byte(`{"event":"RunError"}`), Final: true}}
		errs := make(chan error, 2)
		for _, l := range []*runlog.Log{a, b} {
			go func() { errs <- l.AppendAt(ctx, runID, 0, 1, end) }()
		}
		var stored, moved int
		for range 2 {
			switch err := <-errs; {
			case err == nil:
				stored++
			case errors.Is(err, runlog.ErrSeqMoved):
				moved++
			default:
				t.Fatal(err)
			}
		}
		if stored != 1 || moved != 1 {
			t.Fatalf("%d stored, %d told the log moved; want one each", stored, moved)
		}
		if err := a.AppendAt(ctx, runID, 0, 5, end); !errors.Is(err, runlog.ErrSeqMoved) {
			t.Fatalf("append at a seq the log has not reached: %v", err)
		}
		got, err := b.Read(ctx, runID, -1, 10)
		if err != nil {
			t.Fatal(err)
		}
		checkSeq(t, got, 0)
		if len(got) != 2 || !got[1].Final || got[1].Attempt != 0 {
			t.Fatalf("log: %+v, want RunStarted and one RunError of attempt 0", got)
		}
	})
}
