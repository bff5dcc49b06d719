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
