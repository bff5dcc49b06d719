package runlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// A paused run continued outside the log (in the foreground, whose events
// are not recorded) and finished: its log ends with the RunPaused of its
// last attempt, which is the end a tail can tell from the log, so the tail
// ends once a read after it finds nothing, without waiting Grace (here an
// hour) for a batch no producer will write. The caller then builds the
// end from the row. Checked for a run on the queue (its job paused at
// attempt 1) and one that is no job, from before the pause and from it.
func TestTail_PausedRunContinuedOutsideTheLogEndsWithoutGrace(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, _ *runlog.Log) {
		ctx := context.Background()
		const runID = "run-continued"
		ev := func(name run.EventType) runlog.Pending {
			return runlog.Pending{Event: string(name), Data: []byte(`{"event":"` + string(name) + `"}`), Final: run.IsTerminal(name)}
		}
		if err := a.Append(ctx, runID, 1, []runlog.Pending{ev(run.EventRunStarted), ev(run.EventRunContent), ev(run.EventRunPaused)}, nil); err != nil {
			t.Fatal(err)
		}
		cfg := runlog.TailConfig{Poll: 20 * time.Millisecond, Grace: time.Hour}
		for _, end := range []runlog.End{{Over: true, Attempt: 1}, {Over: true}} {
			for _, after := range []int64{-1, 0, 2} {
				tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				n := 0
				for r, err := range a.Tail(tctx, runID, after, func(context.Context) (runlog.End, error) { return end, nil }, cfg) {
					if err != nil {
						t.Fatal(err)
					}
					if r.Seq != runlog.Idle {
						n++
					}
				}
				if tctx.Err() != nil {
					t.Fatalf("%+v, from %d: the tail did not end (it waits Grace)", end, after)
				}
				cancel()
				if want := int(2 - after); n != want {
					t.Fatalf("%+v, from %d: %d events, want %d", end, after, n, want)
				}
			}
		}
	})
}
