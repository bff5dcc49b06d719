package runlog_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// recordAttempt records one attempt of a run: RunStarted, n contents, then
// its terminal event.
func recordAttempt(t *testing.T, l *runlog.Log, runID string, attempt, n int, terminal run.EventType) {
	t.Helper()
	rec := l.Record(context.Background(), runID, attempt, nil)
	rec.Add(run.Event{Event: run.EventRunStarted, RunID: runID})
	for i := range n {
		rec.Add(content(runID, attempt*100+i))
	}
	rec.Add(run.Event{Event: terminal, RunID: runID})
	if err := rec.Close(); err != nil {
		t.Error(err)
	}
}

// A run the durable queue retried: attempt 1 ended with its terminal
// RunError, attempt 2 appended its own events after it. A reader (live from
// the start, arriving between the attempts, or resuming from an index in
// attempt 1) follows the run to attempt 2's final event; it does not stop
// at attempt 1's.
func TestTail_FollowsARetriedRunToItsLastAttempt(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		const runID = "run-retried"
		const n = 5 // contents per attempt: each attempt stores n+2 events
		// The queue's word: the run is over once attempt 2 ended (its job
		// is final); between the attempts its job is queued again.
		var over atomic.Bool
		ended := func(context.Context) (runlog.End, error) { return runlog.End{Over: over.Load(), Attempt: 2}, nil }

		live := make(chan tailed, 1)
		go func() { live <- tailAll(b, runID, -1, ended) }()

		recordAttempt(t, a, runID, 1, n, run.EventRunError)
		// A reader that arrives after attempt 1's terminal event.
		between := make(chan tailed, 1)
		go func() { between <- tailAll(b, runID, -1, ended) }()
		time.Sleep(3 * fast.Poll) // both tails have read attempt 1's end

		recordAttempt(t, a, runID, 2, n, run.EventRunCompleted)
		over.Store(true)

		check := func(name string, tl tailed, from int64) {
			t.Helper()
			got := tl.recs
			if tl.err != nil {
				t.Fatalf("%s: %v", name, tl.err)
			}
			checkSeq(t, got, from)
			if want := 2*(n+2) - int(from); len(got) != want {
				t.Fatalf("%s: %d events, want %d (to attempt 2's end): %v", name, len(got), want, events(got))
			}
			if last := got[len(got)-1]; last.Attempt != 2 || !last.Final || last.Event != string(run.EventRunCompleted) {
				t.Fatalf("%s: ends with %+v, want attempt 2's RunCompleted", name, last)
			}
		}
		check("live reader", <-live, 0)
		check("reader between the attempts", <-between, 0)
		// Resuming from an index in attempt 1 (a client that saw part of
		// it): the rest of attempt 1, then attempt 2.
		check("resumed from attempt 1", tailAll(a, runID, 2, ended), 3)
		// Resuming from attempt 1's terminal event.
		check("resumed from attempt 1's end", tailAll(a, runID, n+1, ended), n+2)
	})
}

// A tail of a finished run that has seen the final event ends as soon as
// the run is over, not after the grace period kept for runs that end
// without one.
func TestTail_EndsAtTheFinalEventOnceTheRunIsOver(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		const runID = "run-done"
		recordAttempt(t, a, runID, 1, 3, run.EventRunCompleted)
		slow := runlog.TailConfig{Poll: 20 * time.Millisecond, Grace: time.Hour}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var got []runlog.Record
		for r, err := range b.Tail(ctx, runID, -1, func(context.Context) (runlog.End, error) { return runlog.End{Over: true}, nil }, slow) {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, r)
		}
		if ctx.Err() != nil || len(got) != 5 || !got[4].Final {
			t.Fatalf("tail ended with %d events (%v)", len(got), ctx.Err())
		}
	})
}

// tailed is what tailAll read.
type tailed struct {
	recs []runlog.Record
	err  error
}

// tailAll tails from after to the end (safe off the test's goroutine).
func tailAll(l *runlog.Log, runID string, after int64, ended func(context.Context) (runlog.End, error)) tailed {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out tailed
	for r, err := range l.Tail(ctx, runID, after, ended, fast) {
		if err != nil {
			out.err = err
			return out
		}
		if r.Seq != runlog.Idle {
			out.recs = append(out.recs, r)
		}
	}
	if ctx.Err() != nil {
		out.err = fmt.Errorf("tail of %s did not end: %d events", runID, len(out.recs))
	}
	return out
}

func events(recs []runlog.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Event
	}
	return out
}
