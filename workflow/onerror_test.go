package workflow

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
)

// A step that failed and was skipped (OnError skip) before the run paused
// ran before the pause: continuing the run does not run it again (its
// side effects would happen twice, and a second outcome could differ from
// the one the run went on with), and the continued run still records it
// as failed.
func TestOnErrorSkip_AFailedStepIsNotRunAgainOnContinue(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var calls atomic.Int32
	boom := Step{Name: "boom", HumanReview: &HumanReview{OnError: OnErrorSkip}, Func: func(context.Context, *StepInput) (FuncResult, error) {
		if calls.Add(1) > 1 {
			return FuncResult{Content: "second outcome"}, nil
		}
		return FuncResult{}, fmt.Errorf("exploded")
	}}
	confirm := fn("b")
	confirm.HumanReview = &HumanReview{RequiresConfirmation: true}
	wf := mustNew(t, Config{ID: "skip-then-pause", DB: d, Steps: []Step{fn("a"), boom, confirm, fn("c")}})
	out, err := wf.Run(context.Background(), run.TextInput("in"), agent.WithRunID("r-skip"))
	if err != nil || out.Status != run.StatusPaused {
		t.Fatalf("run = %s %v, %v; want PAUSED", out.Status, out.Content, err)
	}
	t1 := true
	out, err = wf.ContinueRun(context.Background(), "r-skip", []run.StepRequirement{{StepID: "2", Confirmed: &t1}})
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("continue = %s %v, %v; want COMPLETED", out.Status, out.Content, err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the skipped step ran %d times, want 1", n)
	}
	if out.ContentString() != "in>a>b>c" {
		t.Errorf("content = %q, want in>a>b>c", out.ContentString())
	}
	var names []string
	for _, r := range out.StepResults {
		names = append(names, r.StepName)
	}
	if len(out.StepResults) != 4 || out.StepResults[1].StepName != "boom" || *out.StepResults[1].Success || !strings.Contains(out.StepResults[1].Error, "exploded") {
		t.Errorf("step_results %v, want boom recorded failed: %+v", names, out.StepResults)
	}
}

// TestOnErrorSkip_AStepAfterAPrimitiveGetsWhatItsOtherStepsLeft: a step
// skipped on error inside a Steps, Loop, Router or Parallel leaves out its
// own content only; the primitive's content (what its other steps left)
// is the next step's input and the run's content, as it is when nothing
// failed (it was the content from before the primitive, their outputs lost).
func TestOnErrorSkip_AStepAfterAPrimitiveGetsWhatItsOtherStepsLeft(t *testing.T) {
	t.Parallel()
	boom := Step{Name: "boom", HumanReview: &HumanReview{OnError: OnErrorSkip}, Func: func(context.Context, *StepInput) (FuncResult, error) {
		return FuncResult{Content: "half-done"}, fmt.Errorf("exploded")
	}}
	cases := []struct {
		name string
		step Step
		want string
	}{
		{"steps", Step{Name: "g", Steps: &Steps{Steps: []Step{fn("b"), boom, fn("c")}}}, "in>a>b>c>d"},
		{"loop", Step{Name: "l", Loop: &Loop{MaxIterations: 2, Steps: []Step{fn("b"), boom}}}, "in>a>b>b>d"},
		{"router", Step{Name: "r", Router: &Router{Choices: []Step{fn("b"), boom, fn("c")},
			Selector: func(*StepInput) ([]string, error) { return []string{"b", "boom", "c"}, nil }}}, "in>a>b>c>d"},
		{"parallel", Step{Name: "p", Parallel: &Parallel{Steps: []Step{boom, fn("b")}}},
			"## Parallel Execution Results\n\n### ❌ FAILURE: boom\nhalf-done\n\n### ✅ SUCCESS: b\nin>a>b>d"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, last := range []bool{false, true} {
				steps, want := []Step{fn("a"), tc.step, fn("d")}, tc.want
				if last {
					steps, want = steps[:2], strings.TrimSuffix(want, ">d")
				}
				wf := mustNew(t, Config{ID: "skip-in-" + tc.name, Steps: steps})
				out, err := wf.Run(context.Background(), run.TextInput("in"))
				if err != nil || out.Status != run.StatusCompleted {
					t.Fatalf("run = %s %v, %v", out.Status, out.Content, err)
				}
				if out.ContentString() != want {
					t.Errorf("last=%v: content = %q, want %q", last, out.ContentString(), want)
				}
			}
		})
	}
}
