package workflow

import (
	"context"
	"errors"
	"iter"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// failingFor is a Func step that fails its first n calls, counting them.
func failingFor(name string, n int32, calls *atomic.Int32) Step {
	return Step{Name: name, Func: func(_ context.Context, in *StepInput) (FuncResult, error) {
		if calls.Add(1) <= n {
			return FuncResult{}, errors.New("the service is down")
		}
		return FuncResult{Content: run.ContentText(in.PreviousStepContent) + ">" + name}, nil
	}}
}

// Step.MaxRetries runs a failing step again, as Agno's max_retries does: a
// workflow written for Agno that relied on it failed at the step's first
// error here (Agentry had no such knob).
func TestStep_MaxRetriesRunsAFailingStepAgain(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	s := failingFor("fetch", 2, &calls)
	s.MaxRetries = 2
	wf := mustNew(t, Config{ID: "retries", DB: openDB(t), Steps: []Step{fn("a"), s, fn("b")}})
	out, err := wf.Run(context.Background(), run.TextInput("in"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run = %s %v, %v; want COMPLETED", out.Status, out.Content, err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("the step ran %d times, want 3 (two retries)", n)
	}
	if got := out.ContentString(); got != "in>a>fetch>b" {
		t.Errorf("content = %q", got)
	}
	// Out of retries, the failure counts.
	calls.Store(0)
	s.MaxRetries = 1
	wf = mustNew(t, Config{ID: "too-few-retries", Steps: []Step{s}})
	out, err = wf.Run(context.Background(), run.TextInput("in"))
	if err == nil || out.Status != run.StatusError {
		t.Fatalf("run = %s, %v; want ERROR after one retry", out.Status, err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the step ran %d times, want 2", n)
	}
}

// failsFirst is a model whose first call fails.
type failsFirst struct {
	model.Model
	calls atomic.Int32
}

func (f *failsFirst) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	if f.calls.Add(1) == 1 {
		return func(yield func(*model.Chunk, error) bool) { yield(nil, errors.New("overloaded")) }
	}
	return f.Model.Stream(ctx, req)
}

// An agent step's retry is a new run of the agent, with a step run id of
// its own: the failed run's row stays as it ended.
func TestStep_MaxRetriesOfAnAgentStepIsANewRun(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	a := newAgent(t, "worker", &failsFirst{Model: scripted.Reply("done")}, d)
	wf := mustNew(t, Config{ID: "agent-retry", DB: d, Steps: []Step{{Runner: a, MaxRetries: 1}}})
	out, err := wf.Run(context.Background(), run.TextInput("go"))
	if err != nil || out.Status != run.StatusCompleted || out.ContentString() != "done" {
		t.Fatalf("run = %s %q, %v; want COMPLETED with done", out.Status, out.ContentString(), err)
	}
	runs, _, err := d.GetRuns(context.Background(), db.RunFilter{SessionID: out.SessionID, AgentID: "worker", Limit: 10, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	statuses := map[run.Status]int{}
	for _, r := range runs {
		if r.AgentID == "worker" {
			statuses[r.Status]++
		}
	}
	if statuses[run.StatusError] != 1 || statuses[run.StatusCompleted] != 1 {
		t.Errorf("the agent's runs by status: %v, want one ERROR and one COMPLETED", statuses)
	}
	if len(out.StepResults) != 1 || out.StepResults[0].StepRunID == "" {
		t.Fatalf("step results %+v", out.StepResults)
	}
}

// Step.SkipOnFailure: a step failing after its retries does not fail the
// run; its output says so in Agno's words and is not the next step's input.
func TestStep_SkipOnFailureGoesOn(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	s := failingFor("fetch", 100, &calls)
	s.MaxRetries, s.SkipOnFailure = 1, true
	wf := mustNew(t, Config{ID: "skip-on-failure", Steps: []Step{fn("a"), s, fn("b")}})
	out, err := wf.Run(context.Background(), run.TextInput("in"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run = %s %v, %v; want COMPLETED", out.Status, out.Content, err)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the step ran %d times, want 2", n)
	}
	if got := out.ContentString(); got != "in>a>b" {
		t.Errorf("content = %q, want the skipped step's input passed on", got)
	}
	var skipped *run.StepOutput
	for i := range out.StepResults {
		if out.StepResults[i].StepName == "fetch" {
			skipped = &out.StepResults[i]
		}
	}
	if skipped == nil || skipped.Success == nil || *skipped.Success || run.ContentText(skipped.Content) != "Step fetch failed but skipped" ||
		!strings.Contains(skipped.Error, "the service is down") {
		t.Errorf("the skipped step's result: %+v", skipped)
	}
}

// A cancelled run's step is not retried.
func TestStep_MaxRetriesDoesNotRetryACancelledRun(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	s := Step{Name: "slow", MaxRetries: 3, Func: func(ctx context.Context, _ *StepInput) (FuncResult, error) {
		calls.Add(1)
		cancel()
		<-ctx.Done()
		return FuncResult{}, ctx.Err()
	}}
	wf := mustNew(t, Config{ID: "cancel-no-retry", Steps: []Step{s}})
	out, _ := wf.Run(ctx, run.TextInput("in"))
	if out == nil || out.Status != run.StatusCancelled {
		t.Fatalf("run = %+v, want CANCELLED", out)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the step ran %d times, want once", n)
	}
}

// MaxRetries and SkipOnFailure where they would do nothing are refused.
func TestStep_RetryKnobsRefusedWhereTheyDoNothing(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		step Step
		want string
	}{
		{"on a parallel", Step{Name: "p", MaxRetries: 2, Parallel: &Parallel{Steps: []Step{fn("a")}}}, "not a Parallel"},
		{"skip on a loop", Step{Name: "l", SkipOnFailure: true, Loop: &Loop{Steps: []Step{fn("a")}}}, "not a Loop"},
		{"negative", Step{Name: "f", MaxRetries: -1, Func: fn("f").Func}, "MaxRetries -1"},
		{"too many", Step{Name: "f", MaxRetries: MaxStepRetries + 1, Func: fn("f").Func}, "use 0 to"},
		{"with on_error", Step{Name: "f", SkipOnFailure: true, HumanReview: &HumanReview{OnError: OnErrorPause}, Func: fn("f").Func}, "keep one"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(Config{ID: "bad", Steps: []Step{c.step}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("New = %v, want an error with %q", err, c.want)
			}
		})
	}
}
