package workflow

import (
	"context"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// TestCancelRun_InTheMiddleOfEachPrimitive: a cancel while a step deep in a
// primitive waits for its model stops everything below (the slow agents'
// runs end CANCELLED, no later step starts) and stores the workflow run
// CANCELLED. Run with -race -count=20.
func TestCancelRun_InTheMiddleOfEachPrimitive(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	// calls counts model calls that began: the tree is then in the middle
	// of the primitive, waiting for a slow model.
	mkSlow := func(calls *atomic.Int32) func(string) Step {
		return func(id string) Step {
			m := &signalModel{Model: scripted.MustNew(scripted.Config{Latency: time.Minute, Turns: []scripted.Turn{{Content: "late"}}}), calls: calls}
			return Step{Name: id, Runner: newAgent(t, id, m, d)}
		}
	}
	for _, c := range []struct {
		name string
		step func(slow func(string) Step) Step
	}{
		{"steps", func(slow func(string) Step) Step { return Step{Steps: &Steps{Steps: []Step{fn("a"), slow("s1")}}} }},
		{"loop", func(slow func(string) Step) Step {
			return Step{Loop: &Loop{MaxIterations: 3, Steps: []Step{slow("s1")}}}
		}},
		{"parallel", func(slow func(string) Step) Step {
			return Step{Parallel: &Parallel{Steps: []Step{slow("s1"), slow("s2"), slow("s3")}}}
		}},
		{"condition", func(slow func(string) Step) Step {
			return Step{Condition: &Condition{If: "true", Steps: []Step{slow("s1")}}}
		}},
		{"router", func(slow func(string) Step) Step {
			return Step{Router: &Router{SelectorExpr: `"s1"`, Choices: []Step{slow("s1"), fn("other")}}}
		}},
		{"nested", func(slow func(string) Step) Step {
			return Step{Router: &Router{SelectorExpr: `"l"`, Choices: []Step{{Name: "l", Loop: &Loop{Steps: []Step{{Parallel: &Parallel{Steps: []Step{slow("s1"), slow("s2")}}}}}}}}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var after, calls atomic.Int32
			slow := mkSlow(&calls)
			later := Step{Name: "later", Func: func(context.Context, *StepInput) (FuncResult, error) { after.Add(1); return FuncResult{}, nil }}
			wf := mustNew(t, Config{ID: "cancel-" + c.name, DB: d, Steps: []Step{c.step(slow), later}})
			for _, stream := range []bool{false, true} {
				runID, sid := uuid.NewString(), uuid.NewString()
				base := calls.Load()
				go func() {
					for calls.Load() == base {
						time.Sleep(time.Millisecond)
					}
					wf.CancelRun(runID)
				}()
				var out *run.Output
				if stream {
					var last run.Event
					for ev, err := range wf.Stream(context.Background(), run.TextInput("go"), agent.WithRunID(runID), agent.WithSessionID(sid)) {
						if err != nil {
							t.Fatal(err)
						}
						last = ev
					}
					if last.Event != run.EventWorkflowCancelled {
						t.Errorf("last event = %s", last.Event)
					}
				} else {
					out, _ = wf.Run(context.Background(), run.TextInput("go"), agent.WithRunID(runID), agent.WithSessionID(sid))
					if out == nil || out.Status != run.StatusCancelled {
						t.Fatalf("run = %+v", out)
					}
				}
				if after.Load() != 0 {
					t.Error("the step after the primitive ran")
				}
				for _, r := range runsOf(t, d, sid) {
					if r.Status != run.StatusCancelled {
						t.Errorf("stream=%v: %s run %s stored %s, want CANCELLED", stream, r.RunType, r.RunID, r.Status)
					}
				}
				if _, ok := run.DefaultRegistry().Lookup(runID); ok {
					t.Error("the run is still registered")
				}
			}
		})
	}
}

// signalModel counts the calls that began.
type signalModel struct {
	model.Model
	calls *atomic.Int32
}

func (m *signalModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	m.calls.Add(1)
	return m.Model.Stream(ctx, req)
}
