package runlog_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// One event larger than the recorder's byte bound (a tool's 9 MiB result)
// while nothing is pending is not a stalled write: it is stored, and so are
// the run's later events, instead of marking the buffer full and dropping
// everything but the terminal event.
func TestRecorder_OneLargeEventKeepsTheRest(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		const runID = "run-large"
		rec := a.Record(context.Background(), runID, 1, nil)
		big := strings.Repeat("x", 9<<20)
		rec.Add(run.Event{Event: run.EventToolCallCompleted, RunID: runID, Content: big})
		for i := range 3 {
			rec.Add(content(runID, i))
		}
		rec.Add(completed(runID))
		if err := rec.Close(); err != nil {
			t.Fatal(err)
		}
		got := collect(t, b, runID, -1, -1, oneAttempt(b, runID))
		checkSeq(t, got, 0)
		if len(got) != 5 {
			t.Fatalf("the log holds %d events, want 5", len(got))
		}
		if len(got[0].Data) < 9<<20 || got[1].Event != string(run.EventRunContent) || !got[4].Final {
			t.Fatalf("the log holds %d bytes, then %s … %+v", len(got[0].Data), got[1].Event, got[4].Event)
		}
	})
}
