package runlog_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

func over(context.Context) (runlog.End, error) { return runlog.End{Over: true}, nil }

// A tail or read asked for an index the log never reached, below -1, or
// with no way to tell the run's end fails at once with a sentinel error
// (no hang, no silent empty stream); the number of stored events itself
// (the id of a terminal event built from the run's row) is accepted.
func TestTail_BadStartsFailClearly(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		ctx := context.Background()
		const runID = "run-index"
		recordAttempt(t, a, runID, 1, 2, run.EventRunCompleted) // 4 events: 0..3
		tails := []struct {
			name   string
			runID  string
			after  int64
			ended  func(context.Context) (runlog.End, error)
			want   error
			events int
		}{
			{"past the end", runID, 5, over, runlog.ErrIndexPastEnd, 0},
			{"far past the end", runID, runlog.MaxIndex, over, runlog.ErrIndexPastEnd, 0},
			{"below -1", runID, -2, over, runlog.ErrBadIndex, 0},
			{"no ended func", runID, -1, nil, runlog.ErrNoEnd, 0},
			{"index of a log that is gone", "run-pruned", 3, over, runlog.ErrIndexPastEnd, 0},
			{"the number of stored events", runID, 4, over, nil, 0},
			{"the final event", runID, 3, over, nil, 0},
			{"from the first", runID, -1, over, nil, 4},
			{"a log that is gone, from the first", "run-pruned", -1, over, nil, 0},
		}
		for _, tc := range tails {
			got := tailAll(b, tc.runID, tc.after, tc.ended)
			if !errors.Is(got.err, tc.want) || (tc.want == nil && got.err != nil) || len(got.recs) != tc.events {
				t.Errorf("%s: tail from %d gave %d events, %v; want %d, %v", tc.name, tc.after, len(got.recs), got.err, tc.events, tc.want)
			}
		}
		if _, err := b.Read(ctx, runID, -2, 10); !errors.Is(err, runlog.ErrBadIndex) {
			t.Errorf("read from -2: %v, want ErrBadIndex", err)
		}
		for _, limit := range []int{0, -1} {
			if recs, err := b.Read(ctx, runID, -1, limit); !errors.Is(err, runlog.ErrBadLimit) {
				t.Errorf("read with limit %d: %d events, %v, want ErrBadLimit", limit, len(recs), err)
			}
		}
	})
}

// A log that retention deletes while a reader replays it ends the tail
// with ErrLogDeleted, not with a stream that stops short as if the run had
// ended there.
func TestTail_LogDeletedWhileReadIsAnError(t *testing.T) {
	eachSQL(t, func(t *testing.T, a, b *runlog.Log) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		const runID = "run-expiring"
		recordAttempt(t, a, runID, 1, 8, run.EventRunCompleted)
		cfg := fast
		cfg.Page = 3
		var got int
		var tailErr error
		for r, err := range b.Tail(ctx, runID, -1, over, cfg) {
			if err != nil {
				tailErr = err
				break
			}
			if got++; got == 1 {
				// Retention of a log whose final event is older than the
				// cutoff.
				if n, err := a.DeleteBefore(ctx, time.Now().Unix()+1, 0); err != nil || n != 10 {
					t.Fatalf("retention deleted %d events (%v)", n, err)
				}
			}
			_ = r
		}
		if ctx.Err() != nil {
			t.Fatal("the tail did not end")
		}
		if !errors.Is(tailErr, runlog.ErrLogDeleted) || got != cfg.Page {
			t.Fatalf("tail gave %d events then %v, want the first page then ErrLogDeleted", got, tailErr)
		}
	})
}
