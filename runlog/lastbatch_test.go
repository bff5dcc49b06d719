package runlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// The job of a retried run turns final (attempt 2 stored the run's final
// row) a moment before attempt 2's last batch lands, written by another
// replica. A tail positioned at attempt 1's terminal event (a client
// resuming with its id, or one that read it just before) does not take the
// run for over there: it follows to attempt 2's final event.
func TestTail_WaitsForTheLastAttemptsBatchAfterItsJobTurnedFinal(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		const runID = "run-late-batch"
		const n = 3
		recordAttempt(t, a, runID, 1, n, run.EventRunError) // seqs 0..n+1
		// The job is final at attempt 2 already; its events land later.
		ended := func(context.Context) (runlog.End, error) { return runlog.End{Over: true, Attempt: 2}, nil }
		landed := make(chan struct{})
		go func() {
			defer close(landed)
			time.Sleep(4 * fast.Poll)
			recordAttempt(t, a, runID, 2, n, run.EventRunCompleted)
		}()
		// A grace far longer than the batch takes to land: the tail must
		// wait for it, not end at attempt 1's RunError.
		var got tailed
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for r, err := range b.Tail(ctx, runID, n+1, ended, runlog.TailConfig{Poll: fast.Poll, Grace: 30 * time.Second}) {
			if err != nil {
				got.err = err
				break
			}
			got.recs = append(got.recs, r)
		}
		<-landed
		if got.err != nil {
			t.Fatal(got.err)
		}
		checkSeq(t, got.recs, n+2)
		if len(got.recs) != n+2 || !got.recs[len(got.recs)-1].Final || got.recs[len(got.recs)-1].Attempt != 2 {
			t.Fatalf("tail from attempt 1's end gave %v, want attempt 2's %d events to its RunCompleted", events(got.recs), n+2)
		}
	})
}

// A run whose job turned final at an attempt that stored no final event
// (it died; the queue gave up) ends the tail after Grace: the wait for the
// last attempt's batch is bounded.
func TestTail_EndsAfterGraceWhenTheLastAttemptStoredNoEnd(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		const runID = "run-last-attempt-died"
		recordAttempt(t, a, runID, 1, 2, run.EventRunError) // seqs 0..3
		ended := func(context.Context) (runlog.End, error) { return runlog.End{Over: true, Attempt: 2}, nil }
		start := time.Now()
		got := tailAll(b, runID, -1, ended)
		if got.err != nil {
			t.Fatal(got.err)
		}
		if len(got.recs) != 4 {
			t.Fatalf("tail gave %v, want attempt 1's 4 events", events(got.recs))
		}
		if d := time.Since(start); d < fast.Grace {
			t.Fatalf("tail ended after %s, before the grace of %s", d, fast.Grace)
		}
	})
}
