package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/run"
)

// eventJSON is the first streamed event of type typ, as its wire JSON.
func eventJSON(t *testing.T, evs []run.Event, typ run.EventType) map[string]any {
	t.Helper()
	for _, e := range evs {
		if e.Event == typ {
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no %s event", typ)
	return nil
}

// The loop, error and router events carry their results and messages in
// Agno's members: LoopIterationCompleted's iteration_results (not
// step_results), LoopExecutionCompleted's all_results, StepError's and
// WorkflowError's error, RouterPaused's allow_multiple_selections.
func TestStream_EventsCarryAgnosMembers(t *testing.T) {
	t.Parallel()
	loop := mustNew(t, Config{ID: "loop", Steps: []Step{{Name: "l", Loop: &Loop{Steps: []Step{fn("a"), fn("b")}, MaxIterations: 2}}}})
	evs := collect(t, loop, "in")
	it := eventJSON(t, evs, run.EventLoopIterationCompleted)
	if res, _ := it["iteration_results"].([]any); len(res) != 2 || it["step_results"] != nil {
		t.Errorf("LoopIterationCompleted = %v, want iteration_results of its 2 steps", it)
	}
	done := eventJSON(t, evs, run.EventLoopExecutionCompleted)
	if all, _ := done["all_results"].([]any); len(all) != 2 || len(all[1].([]any)) != 2 {
		t.Errorf("LoopExecutionCompleted = %v, want all_results of 2 iterations of 2 steps", done)
	}

	failing := mustNew(t, Config{ID: "fails", Steps: []Step{{Name: "boom", Func: func(context.Context, *StepInput) (FuncResult, error) {
		return FuncResult{}, errors.New("the disk is full")
	}}}})
	evs = collect(t, failing, "in")
	for _, typ := range []run.EventType{run.EventStepError, run.EventWorkflowError} {
		if e := eventJSON(t, evs, typ); e["error"] == nil || e["error"] != e["content"] {
			t.Errorf("%s = %v, want its message in error (and content)", typ, e)
		}
	}

	route := Step{Name: "r", Router: &Router{Choices: []Step{fn("a"), fn("b")}}, HumanReview: &HumanReview{RequiresUserInput: true, AllowMultipleSelections: true}}
	evs = collect(t, mustNew(t, Config{ID: "route", DB: openDB(t), Steps: []Step{route}}), "in")
	if e := eventJSON(t, evs, run.EventRouterPaused); e["allow_multiple_selections"] != true {
		t.Errorf("RouterPaused = %v, want allow_multiple_selections true", e)
	}
}
