package workflow

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// A Go callback of a primitive (a condition's evaluator, a router's
// selector, a loop's end condition) that panics fails the run with an
// error naming the step, stored ERROR, as a panicking Func step does; in a
// parallel branch it must not take the process down either.
func TestRun_APanickingEvaluatorFailsTheRun(t *testing.T) {
	t.Parallel()
	boom := func() { panic("index out of range") }
	for _, c := range []struct {
		name string
		step Step
	}{
		{"condition", Step{Name: "check", Condition: &Condition{Evaluator: func(*StepInput) (bool, error) { boom(); return true, nil }, Steps: []Step{fn("a")}}}},
		{"router", Step{Name: "route", Router: &Router{Selector: func(*StepInput) ([]string, error) { boom(); return nil, nil }, Choices: []Step{fn("a")}}}},
		{"loop", Step{Name: "again", Loop: &Loop{EndCondition: func(LoopIteration) (bool, error) { boom(); return true, nil }, Steps: []Step{fn("a")}}}},
		{"runner", Step{Runner: panicRunner{}}},
		{"parallel branch", Step{Name: "p", Parallel: &Parallel{Steps: []Step{fn("b"),
			{Name: "check", Condition: &Condition{Evaluator: func(*StepInput) (bool, error) { boom(); return true, nil }, Steps: []Step{fn("a")}}}}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := openDB(t)
			id := uuid.NewString()
			wf := mustNew(t, Config{ID: "panics", DB: d, Steps: []Step{fn("first"), c.step, fn("after")}})
			out, err := wf.Run(context.Background(), run.TextInput("x"), agent.WithRunID(id))
			if err == nil || out == nil || out.Status != run.StatusError {
				t.Fatalf("run = %+v, %v; want ERROR", out, err)
			}
			if !strings.Contains(out.ContentString(), "panicked") || !strings.Contains(out.ContentString(), "index out of range") {
				t.Errorf("content = %q, want the panic", out.ContentString())
			}
			row, err := d.GetRun(context.Background(), id)
			if err != nil || row.Status != run.StatusError {
				t.Fatalf("stored run = %+v, %v; want ERROR", row, err)
			}
			evs := collect(t, wf, "x")
			if last := evs[len(evs)-1]; last.Event != run.EventWorkflowError || !strings.Contains(run.ContentText(last.Content), "panicked") {
				t.Errorf("last event = %s %v, want WorkflowError with the panic", last.Event, last.Content)
			}
		})
	}
}

// panicRunner is an agent.Runner with a bug: it panics.
type panicRunner struct{}

func (panicRunner) Component() run.Component { return run.Component{Type: run.TypeAgent, ID: "buggy"} }
func (panicRunner) DB() *db.DB               { return nil }
func (panicRunner) CancelRun(string) bool    { return false }
func (panicRunner) Run(context.Context, run.Input, ...agent.RunOption) (*run.Output, error) {
	panic("index out of range")
}
func (panicRunner) Stream(context.Context, run.Input, ...agent.RunOption) iter.Seq2[run.Event, error] {
	panic("index out of range")
}

// A failing condition evaluator, router selector or loop end condition
// sends StepError naming the step before WorkflowError: the loop's end
// condition sent none.
func TestRun_AFailingPrimitiveCallbackSendsStepError(t *testing.T) {
	t.Parallel()
	fail := errors.New("no verdict")
	for _, c := range []struct {
		name string
		step Step
	}{
		{"condition", Step{Name: "check", Condition: &Condition{Evaluator: func(*StepInput) (bool, error) { return false, fail }, Steps: []Step{fn("a")}}}},
		{"router", Step{Name: "route", Router: &Router{Selector: func(*StepInput) ([]string, error) { return nil, fail }, Choices: []Step{fn("a")}}}},
		{"loop", Step{Name: "again", Loop: &Loop{EndCondition: func(LoopIteration) (bool, error) { return false, fail }, Steps: []Step{fn("a")}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wf := mustNew(t, Config{ID: "fails", Steps: []Step{c.step}})
			evs := collect(t, wf, "x")
			n := len(evs)
			if n < 2 || evs[n-1].Event != run.EventWorkflowError || evs[n-2].Event != run.EventStepError || evs[n-2].StepName != c.step.Name {
				var got []run.EventType
				for _, e := range evs {
					got = append(got, e.Event)
				}
				t.Fatalf("events end %v, want StepError (%s) then WorkflowError", got, c.step.Name)
			}
		})
	}
}

// TestRouter_AChoicePickedTwiceFailsTheStep: a selector (a function or a
// CEL list) or a person picking a choice twice is refused, as an unknown
// name is; the second pick ran nothing (its id, its place among the
// choices, was the first's, whose output was replayed) while the run
// reported it twice.
func TestRouter_AChoicePickedTwiceFailsTheStep(t *testing.T) {
	t.Parallel()
	for _, r := range []Router{
		{Selector: func(*StepInput) ([]string, error) { return []string{"a", "b", "a"}, nil }},
		{SelectorExpr: `["a", "a"]`},
	} {
		r.Choices = []Step{fn("a"), fn("b")}
		wf := mustNew(t, Config{ID: "twice", Steps: []Step{{Name: "route", Router: &r}}})
		out, err := wf.Run(context.Background(), run.TextInput("x"))
		if err == nil || out.Status != run.StatusError || !strings.Contains(out.ContentString(), `chose "a" twice`) {
			t.Errorf("%q: run = %s %v, %v", r.SelectorExpr, out.Status, out.Content, err)
		}
	}
	var a atomic.Int32
	wf := mustNew(t, Config{ID: "twice-by-hand", DB: openDB(t), Steps: []Step{{Name: "r",
		Router:      &Router{Choices: []Step{counted("a", &a), fn("b")}},
		HumanReview: &HumanReview{RequiresUserInput: true, AllowMultipleSelections: true}}}})
	out, _ := wf.Run(context.Background(), run.TextInput("in"))
	req := out.StepRequirements[0]
	req.SelectedChoices = []string{"a", "a"}
	if _, err := wf.ContinueRun(context.Background(), out.RunID, []run.StepRequirement{req}); !errors.Is(err, ErrUnresolved) {
		t.Errorf("a route selected twice: %v", err)
	}
	if a.Load() != 0 {
		t.Errorf("a ran %d times", a.Load())
	}
}
