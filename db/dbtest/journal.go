package dbtest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

func mustJournal(t *testing.T, d *db.DB) *db.Journal {
	t.Helper()
	j, err := db.NewJournal(d)
	noErr(t, err)
	return j
}

// counted returns a step function that counts its calls and answers res.
func counted(n *atomic.Int32, res string) func(context.Context) (json.RawMessage, error) {
	return func(context.Context) (json.RawMessage, error) {
		n.Add(1)
		return json.RawMessage(res), nil
	}
}

func step(runID, key string, attempt int, idempotent bool) run.JournalStep {
	return run.JournalStep{RunID: runID, Key: key, Kind: "tool", Attempt: attempt, Idempotent: idempotent, Request: json.RawMessage(`{"q":1}`)}
}

var journalTests = map[string]func(t *testing.T, d *db.DB){
	"Journal_RecordedStepReplaysWithoutCallingFn": func(t *testing.T, d *db.DB) {
		j := mustJournal(t, d)
		var n atomic.Int32
		out, err := j.Do(bg, step("r1", "tool:c1", 1, true), counted(&n, `{"v":"first"}`))
		noErr(t, err)
		equal(t, "result", string(out), `{"v":"first"}`)
		out, err = j.Do(bg, step("r1", "tool:c1", 2, true), counted(&n, `{"v":"second"}`))
		noErr(t, err)
		equal(t, "replayed result", string(out), `{"v":"first"}`)
		equal(t, "calls", n.Load(), int32(1))
		steps, err := j.Steps(bg, "r1")
		noErr(t, err)
		equal(t, "steps", len(steps), 1)
		equal(t, "status", steps[0].Status, db.StepDone)
		equal(t, "request", string(steps[0].Request), `{"q":1}`)
	},
	"Journal_FailedFnIsNotRecorded": func(t *testing.T, d *db.DB) {
		j := mustJournal(t, d)
		boom := fmt.Errorf("boom")
		_, err := j.Do(bg, step("r1", "model:1", 1, true), func(context.Context) (json.RawMessage, error) { return nil, boom })
		wantErr(t, err, boom)
		var n atomic.Int32
		out, err := j.Do(bg, step("r1", "model:1", 1, true), counted(&n, `"ok"`))
		noErr(t, err)
		equal(t, "result", string(out), `"ok"`)
		equal(t, "calls", n.Load(), int32(1))
	},
	"Journal_InterruptedNonIdempotentStepIsRefused": func(t *testing.T, d *db.DB) {
		j := mustJournal(t, d)
		// Attempt 1 starts the step and dies inside fn (its result is
		// never recorded).
		_, err := j.Do(bg, step("r1", "tool:pay", 1, false), func(context.Context) (json.RawMessage, error) {
			return nil, context.Canceled
		})
		wantErr(t, err, context.Canceled)
		var n atomic.Int32
		_, err = j.Do(bg, step("r1", "tool:pay", 2, false), counted(&n, `"paid"`))
		wantErr(t, err, run.ErrStepInterrupted)
		equal(t, "calls", n.Load(), int32(0))
		// A human confirmed: the step runs again as idempotent.
		out, err := j.Do(bg, step("r1", "tool:pay", 2, true), counted(&n, `"paid"`))
		noErr(t, err)
		equal(t, "result", string(out), `"paid"`)
		equal(t, "calls", n.Load(), int32(1))
	},
	"Journal_InterruptedIdempotentStepRunsAgain": func(t *testing.T, d *db.DB) {
		j := mustJournal(t, d)
		_, _ = j.Do(bg, step("r1", "tool:c1", 1, true), func(context.Context) (json.RawMessage, error) { return nil, context.Canceled })
		var n atomic.Int32
		out, err := j.Do(bg, step("r1", "tool:c1", 2, true), counted(&n, `1`))
		noErr(t, err)
		equal(t, "result", string(out), `1`)
		equal(t, "calls", n.Load(), int32(1))
	},
	"Journal_SupersededAttemptIsFenced": func(t *testing.T, d *db.DB) {
		j := mustJournal(t, d)
		var n atomic.Int32
		_, err := j.Do(bg, step("r1", "model:1", 1, true), counted(&n, `1`))
		noErr(t, err)
		// Attempt 2 takes over: it claims the run, then replays.
		noErr(t, j.Fence(bg, "r1", 2))
		_, err = j.Do(bg, step("r1", "model:1", 2, true), counted(&n, `2`))
		noErr(t, err)
		// The old worker is still alive and tries to go on.
		_, err = j.Do(bg, step("r1", "model:2", 1, true), counted(&n, `3`))
		wantErr(t, err, run.ErrFenced)
		equal(t, "calls", n.Load(), int32(1))
		wantErr(t, j.Fence(bg, "r1", 1), run.ErrFenced)
		noErr(t, j.Fence(bg, "r1", 2))
		// Another run is not affected.
		_, err = j.Do(bg, step("r2", "model:1", 1, true), counted(&n, `4`))
		noErr(t, err)
	},
	"Journal_NewAttemptsWriteFencesTheOldOne": func(t *testing.T, d *db.DB) {
		j := mustJournal(t, d)
		var n atomic.Int32
		_, err := j.Do(bg, step("r1", "model:1", 1, true), counted(&n, `1`))
		noErr(t, err)
		// Attempt 2 replays (a read: it fences nothing yet), then records.
		_, err = j.Do(bg, step("r1", "model:1", 2, true), counted(&n, `x`))
		noErr(t, err)
		_, err = j.Do(bg, step("r1", "tool:a", 2, true), counted(&n, `2`))
		noErr(t, err)
		_, err = j.Do(bg, step("r1", "tool:b", 1, true), counted(&n, `3`))
		wantErr(t, err, run.ErrFenced)
		_, err = j.Do(bg, step("r1", "tool:c", 1, false), counted(&n, `4`))
		wantErr(t, err, run.ErrFenced)
		equal(t, "calls", n.Load(), int32(2)) // neither fenced step ran
		steps, err := j.Steps(bg, "r1")
		noErr(t, err)
		for _, s := range steps {
			if s.StepKey == "tool:b" || s.StepKey == "tool:c" {
				t.Fatalf("a fenced attempt wrote step %+v", s)
			}
		}
	},
	"Journal_FencedWhileFnRan": func(t *testing.T, d *db.DB) {
		j := mustJournal(t, d)
		var n atomic.Int32
		_, err := j.Do(bg, step("r1", "tool:slow", 1, true), func(ctx context.Context) (json.RawMessage, error) {
			// A newer attempt takes over while this step runs.
			if _, err := j.Do(ctx, step("r1", "model:1", 2, false), counted(&n, `"new"`)); err != nil {
				return nil, err
			}
			return json.RawMessage(`"old"`), nil
		})
		wantErr(t, err, run.ErrFenced)
		steps, err := j.Steps(bg, "r1")
		noErr(t, err)
		for _, s := range steps {
			if s.StepKey == "tool:slow" && s.Status == db.StepDone {
				t.Fatalf("a superseded attempt recorded its result: %+v", s)
			}
		}
	},
	"Journal_ClearDeletesTheRunsStepsOnly": func(t *testing.T, d *db.DB) {
		j := mustJournal(t, d)
		var n atomic.Int32
		for _, r := range []string{"r1", "r2"} {
			for _, k := range []string{"model:1", "tool:a", "model:2"} {
				_, err := j.Do(bg, step(r, k, 1, true), counted(&n, `1`))
				noErr(t, err)
			}
		}
		noErr(t, j.ClearJournal(bg, "r1"))
		s1, err := j.Steps(bg, "r1")
		noErr(t, err)
		equal(t, "r1 steps", len(s1), 0)
		s2, err := j.Steps(bg, "r2")
		noErr(t, err)
		equal(t, "r2 steps", len(s2), 3)
	},
	"Journal_BadStepIsRefused": func(t *testing.T, d *db.DB) {
		j := mustJournal(t, d)
		var n atomic.Int32
		for _, s := range []run.JournalStep{step("", "model:1", 1, true), step("r1", "", 1, true), step("r1", "model:1", 0, true)} {
			_, err := j.Do(bg, s, counted(&n, `1`))
			wantErr(t, err, db.ErrInvalidRecord)
		}
		equal(t, "calls", n.Load(), int32(0))
	},
	"Journal_ConcurrentRunsDoNotInterfere": func(t *testing.T, d *db.DB) {
		j := mustJournal(t, d)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for r := range 8 {
			wg.Go(func() {
				runID := fmt.Sprintf("run-%d", r)
				for k := range 5 {
					want := fmt.Sprintf(`"%s/%d"`, runID, k)
					out, err := j.Do(bg, step(runID, fmt.Sprintf("model:%d", k+1), 1, true), func(context.Context) (json.RawMessage, error) {
						return json.RawMessage(want), nil
					})
					if err == nil && string(out) != want {
						err = fmt.Errorf("run %s step %d: got %s, want %s", runID, k, out, want)
					}
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for r := range 8 {
			steps, err := j.Steps(bg, fmt.Sprintf("run-%d", r))
			noErr(t, err)
			equal(t, "steps", len(steps), 5)
		}
	},
}
