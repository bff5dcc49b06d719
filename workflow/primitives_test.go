package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// fn is a function step that appends its name to the previous content and
// counts its calls in the session state under "calls".
func fn(name string) Step {
	return Step{Name: name, Func: func(_ context.Context, in *StepInput) (FuncResult, error) {
		in.State.Update(func(m map[string]any) {
			n, _ := m["calls"].(float64)
			m["calls"] = n + 1
		})
		prev := ""
		if in.PreviousStepContent != nil {
			prev = run.ContentText(in.PreviousStepContent)
		}
		return FuncResult{Content: prev + ">" + name}, nil
	}}
}

// collect streams wf and returns its events.
func collect(t *testing.T, wf *Workflow, input string, opts ...agent.RunOption) []run.Event {
	t.Helper()
	var evs []run.Event
	for ev, err := range wf.Stream(context.Background(), run.TextInput(input), opts...) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// names renders workflow events as Event:step_name, leaving out the events
// of the agents the steps run.
func names(evs []run.Event) string {
	var out []string
	for _, e := range evs {
		if e.AgentID != "" || e.TeamID != "" {
			continue
		}
		s := string(e.Event)
		if e.StepName != "" {
			s += ":" + e.StepName
		}
		if e.TaskEvent != nil && e.Iteration > 0 {
			s += fmt.Sprintf("#%d", e.Iteration)
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func mustNew(t *testing.T, cfg Config) *Workflow {
	t.Helper()
	wf, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wf.Close)
	return wf
}

func TestStream_EachPrimitiveEmitsAgnoEventsInOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		step Step
		want string
		out  string
	}{
		{"steps", Step{Name: "g", Steps: &Steps{Steps: []Step{fn("a"), fn("b")}}},
			"StepsExecutionStarted:g StepStarted:a StepCompleted:a StepStarted:b StepCompleted:b StepsExecutionCompleted:g", "in>a>b"},
		{"loop", Step{Name: "l", Loop: &Loop{Steps: []Step{fn("a")}, MaxIterations: 5, EndConditionExpr: "current_iteration >= 2"}},
			"LoopExecutionStarted:l LoopIterationStarted:l#1 StepStarted:a StepCompleted:a LoopIterationCompleted:l#1 LoopIterationStarted:l#2 StepStarted:a StepCompleted:a LoopIterationCompleted:l#2 LoopExecutionCompleted:l", "in>a>a"},
		{"loop max iterations", Step{Name: "l", Loop: &Loop{Steps: []Step{fn("a")}, MaxIterations: 2}},
			"LoopExecutionStarted:l LoopIterationStarted:l#1 StepStarted:a StepCompleted:a LoopIterationCompleted:l#1 LoopIterationStarted:l#2 StepStarted:a StepCompleted:a LoopIterationCompleted:l#2 LoopExecutionCompleted:l", "in>a>a"},
		{"parallel of one", Step{Name: "p", Parallel: &Parallel{Steps: []Step{fn("a")}}},
			"ParallelExecutionStarted:p StepStarted:a StepCompleted:a ParallelExecutionCompleted:p", "## Parallel Execution Results\n\n### ✅ SUCCESS: a\nin>a"},
		{"condition true", Step{Name: "c", Condition: &Condition{If: `input.contains("in")`, Steps: []Step{fn("a")}}},
			"ConditionExecutionStarted:c StepStarted:a StepCompleted:a ConditionExecutionCompleted:c", "in>a"},
		{"condition false runs else", Step{Name: "c", Condition: &Condition{If: `input == "other"`, Steps: []Step{fn("a")}, Else: []Step{fn("b")}}},
			"ConditionExecutionStarted:c StepStarted:b StepCompleted:b ConditionExecutionCompleted:c", "in>b"},
		{"condition false without else passes the input on", Step{Name: "c", Condition: &Condition{Evaluator: func(*StepInput) (bool, error) { return false, nil }, Steps: []Step{fn("a")}}},
			"ConditionExecutionStarted:c ConditionExecutionCompleted:c", "in"},
		{"router", Step{Name: "r", Router: &Router{SelectorExpr: `input == "in" ? "b" : "a"`, Choices: []Step{fn("a"), fn("b")}}},
			"RouterExecutionStarted:r StepStarted:b StepCompleted:b RouterExecutionCompleted:r", "in>b"},
		{"router picks two", Step{Name: "r", Router: &Router{Selector: func(*StepInput) ([]string, error) { return []string{"b", "a"}, nil }, Choices: []Step{fn("a"), fn("b")}}},
			"RouterExecutionStarted:r StepStarted:b StepCompleted:b StepStarted:a StepCompleted:a RouterExecutionCompleted:r", "in>b>a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wf := mustNew(t, Config{ID: "prims", Steps: []Step{c.step}})
			evs := collect(t, wf, "in")
			want := "WorkflowStarted " + c.want + " WorkflowCompleted"
			if got := names(evs); got != want {
				t.Errorf("events\n got %s\nwant %s", got, want)
			}
			if last := evs[len(evs)-1]; last.Content != c.out {
				t.Errorf("content = %q, want %q", last.Content, c.out)
			}
			out, err := wf.Run(context.Background(), run.TextInput("in"))
			if err != nil || out.Content != c.out {
				t.Errorf("Run = %v, %v", out.Content, err)
			}
		})
	}
}

func TestRun_ParallelKeepsOutputsInOrderAndSharesState(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var branches []Step
	for i := range 8 {
		branches = append(branches, fn(fmt.Sprintf("b%d", i)))
	}
	wf := mustNew(t, Config{ID: "par", DB: d, Steps: []Step{{Name: "p", Parallel: &Parallel{Steps: branches}}, fn("after")}})
	out, err := wf.Run(context.Background(), run.TextInput("x"), agent.WithSessionID("s"))
	if err != nil {
		t.Fatal(err)
	}
	p := out.StepResults[0]
	if p.StepType != "Parallel" || len(p.Steps) != 8 {
		t.Fatalf("parallel result = %+v", p)
	}
	for i, s := range p.Steps {
		if s.StepName != fmt.Sprintf("b%d", i) || s.Content != fmt.Sprintf("x>b%d", i) {
			t.Errorf("branch %d = %s %v", i, s.StepName, s.Content)
		}
	}
	if !strings.HasSuffix(out.ContentString(), ">after") || !strings.Contains(out.ContentString(), "### ✅ SUCCESS: b7\nx>b7") {
		t.Errorf("content = %q", out.Content)
	}
	// Nine steps counted, none lost to a race between the branches.
	if out.SessionState["calls"] != float64(9) {
		t.Errorf("session state = %v", out.SessionState)
	}
	s, err := d.GetSession(context.Background(), "s")
	if err != nil || !strings.Contains(string(s.SessionData), `"calls":9`) {
		t.Fatalf("stored session = %s, %v", s.SessionData, err)
	}
	// The next run of the session starts from the stored state.
	out, err = wf.Run(context.Background(), run.TextInput("x"), agent.WithSessionID("s"))
	if err != nil || out.SessionState["calls"] != float64(18) {
		t.Errorf("second run state = %v, %v", out.SessionState, err)
	}
}

func TestRun_StepInputHasPreviousOutputsByNameAndTheOriginalInput(t *testing.T) {
	t.Parallel()
	var seen *StepInput
	check := Step{Name: "check", Func: func(_ context.Context, in *StepInput) (FuncResult, error) {
		seen = in
		return FuncResult{Content: map[string]any{"ok": true}}, nil
	}}
	d := openDB(t)
	wf := mustNew(t, Config{ID: "inputs", DB: d, Steps: []Step{
		{Runner: newAgent(t, "writer", scripted.Reply("drafted"), d)},
		{Name: "p", Parallel: &Parallel{Steps: []Step{fn("x"), fn("y")}}},
		fn("z"),
		check,
	}})
	out, err := wf.Run(context.Background(), run.TextInput("topic"), agent.WithDependencies(map[string]any{"k": "v"}))
	if err != nil {
		t.Fatal(err)
	}
	if seen.Input != "topic" || run.ContentText(seen.PreviousStepContent) == "" || seen.AdditionalData["k"] != "v" {
		t.Errorf("input = %+v", seen)
	}
	for name, want := range map[string]string{"writer": "drafted", "x": "drafted>x", "y": "drafted>y"} {
		if got := seen.PreviousStepOutputs[name]; got.Content != want {
			t.Errorf("outputs[%s] = %v, want %q", name, got.Content, want)
		}
	}
	if _, ok := seen.PreviousStepOutputs["p"]; !ok {
		t.Error("the parallel's own output is missing from the previous outputs")
	}
	if out.Content.(map[string]any)["ok"] != true || out.ContentType != "dict" {
		t.Errorf("structured content = %#v %s", out.Content, out.ContentType)
	}
}

func TestRun_AStepThatStopsEndsTheWorkflowEarly(t *testing.T) {
	t.Parallel()
	var after atomic.Int32
	stop := Step{Name: "stop", Func: func(context.Context, *StepInput) (FuncResult, error) {
		return FuncResult{Content: "enough", Stop: true}, nil
	}}
	never := Step{Name: "never", Func: func(context.Context, *StepInput) (FuncResult, error) { after.Add(1); return FuncResult{}, nil }}
	wf := mustNew(t, Config{ID: "stop", Steps: []Step{{Name: "l", Loop: &Loop{Steps: []Step{fn("a"), stop, never}, MaxIterations: 3}}, never}})
	out, err := wf.Run(context.Background(), run.TextInput("x"))
	if err != nil || out.Status != run.StatusCompleted || out.Content != "enough" || after.Load() != 0 {
		t.Fatalf("run = %v %v %v; steps after the stop ran %d times", out.Status, out.Content, err, after.Load())
	}
	if !out.StepResults[0].Stop || len(out.StepResults) != 1 {
		t.Errorf("step results = %+v", out.StepResults)
	}
}

// TestRun_NestedParallelInLoopInRouterStoresTheTree: the stored run holds
// the nested step_results with Agno's step types, and the agents' runs are
// rows under the workflow run.
func TestRun_NestedParallelInLoopInRouterStoresTheTree(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	research := newAgent(t, "research", scripted.Reply("facts"), d)
	wf := mustNew(t, Config{ID: "nested", DB: d, Steps: []Step{{Name: "route", Router: &Router{
		SelectorExpr: `"deep"`,
		Choices: []Step{
			fn("shallow"),
			{Name: "deep", Loop: &Loop{MaxIterations: 2, Steps: []Step{
				{Name: "fan", Parallel: &Parallel{Steps: []Step{{Name: "r", Runner: research}, fn("count")}}},
			}}},
		},
	}}}})
	for _, stream := range []bool{false, true} {
		sid := fmt.Sprintf("s-%v", stream)
		var out *run.Output
		if stream {
			evs := collect(t, wf, "go", agent.WithSessionID(sid))
			got := names(evs)
			for _, want := range []string{"RouterExecutionStarted:route LoopExecutionStarted:deep LoopIterationStarted:deep#1 ParallelExecutionStarted:fan",
				"ParallelExecutionCompleted:fan LoopIterationCompleted:deep#1 LoopIterationStarted:deep#2 ParallelExecutionStarted:fan",
				"ParallelExecutionCompleted:fan LoopIterationCompleted:deep#2 LoopExecutionCompleted:deep RouterExecutionCompleted:route WorkflowCompleted"} {
				if !strings.Contains(got, want) {
					t.Errorf("events %s\nmiss %s", got, want)
				}
			}
			if !slices.ContainsFunc(evs, func(e run.Event) bool { return e.AgentID == "research" && e.Event == run.EventRunCompleted }) {
				t.Error("the agent's own events were not forwarded")
			}
		} else {
			var err error
			if out, err = wf.Run(context.Background(), run.TextInput("go"), agent.WithSessionID(sid)); err != nil {
				t.Fatal(err)
			}
		}
		rows := runsOf(t, d, sid)
		var wfRow db.Run
		agents := 0
		for _, r := range rows {
			if r.RunType == run.TypeWorkflow {
				wfRow = r
			} else if r.ParentRunID != "" {
				agents++
			}
		}
		if agents != 2 || wfRow.Status != run.StatusCompleted {
			t.Fatalf("rows: %d agent runs under the workflow run, workflow %s", agents, wfRow.Status)
		}
		stored, err := wfRow.Output()
		if err != nil {
			t.Fatal(err)
		}
		if out != nil && stored.RunID != out.RunID {
			t.Fatal("stored another run")
		}
		var tree func(o []run.StepOutput) string
		tree = func(o []run.StepOutput) string {
			var parts []string
			for _, s := range o {
				p := s.StepType + ":" + s.StepName
				if len(s.Steps) > 0 {
					p += "[" + tree(s.Steps) + "]"
				}
				parts = append(parts, p)
			}
			return strings.Join(parts, " ")
		}
		want := "Router:route[Loop:deep[Parallel:fan[Step:r Step:count] Parallel:fan[Step:r Step:count]]]"
		if got := tree(stored.StepResults); got != want {
			t.Errorf("stored tree\n got %s\nwant %s", got, want)
		}
		raw, _ := json.Marshal(stored.StepResults[0])
		for _, key := range []string{`"step_type":"Router"`, `"executor_type":"agent"`, `"step_run_id"`, `"success":true`} {
			if !strings.Contains(string(raw), key) {
				t.Errorf("stored step result lacks %s: %s", key, raw)
			}
		}
	}
}

func TestNew_RejectsBadPrimitives(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		step Step
		want string
	}{
		"two kinds":        {Step{Func: fn("a").Func, Loop: &Loop{Steps: []Step{fn("b")}}, Name: "x"}, "one kind"},
		"unnamed func":     {Step{Func: fn("a").Func}, "needs a Name"},
		"empty loop":       {Step{Loop: &Loop{}}, "is empty"},
		"bad expression":   {Step{Condition: &Condition{If: "input +", Steps: []Step{fn("a")}}}, "invalid expression"},
		"not a bool":       {Step{Condition: &Condition{If: "input", Steps: []Step{fn("a")}}}, "want bool"},
		"router no select": {Step{Router: &Router{Choices: []Step{fn("a")}}}, "needs a Selector"},
		"review on loop":   {Step{Loop: &Loop{Steps: []Step{fn("a")}}, HumanReview: &HumanReview{RequiresOutputReview: true}}, "does not apply to a Loop"},
		"else on step":     {Step{Name: "a", Func: fn("a").Func, HumanReview: &HumanReview{RequiresConfirmation: true, OnReject: "else"}}, "does not apply to a Step"},
		"asks nothing":     {Step{Name: "a", Func: fn("a").Func, HumanReview: &HumanReview{}}, "asks nothing"},
		"bad on_timeout":   {Step{Name: "a", Func: fn("a").Func, HumanReview: &HumanReview{RequiresConfirmation: true, OnTimeout: "later"}}, "OnTimeout"},
		// A Router's rejected output was reviewed again and again, nothing
		// run again, retry_count 0 each time: max_retries never reached.
		"retry on router": {Step{Router: &Router{Choices: []Step{fn("a")}, SelectorExpr: `"a"`},
			HumanReview: &HumanReview{RequiresOutputReview: true, OnReject: OnRejectRetry}}, "OnReject retry does not apply to a Router"},
	} {
		if _, err := New(Config{Steps: []Step{c.step}}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// TestRun_OnErrorSkipGoesOnWithoutTheFailedStep: a failing step with
// HumanReview OnError skip is recorded as failed and the run goes on with the
// content before it; without it the run ends in ERROR.
func TestRun_OnErrorSkipGoesOnWithoutTheFailedStep(t *testing.T) {
	t.Parallel()
	boom := func(h *HumanReview) Step {
		return Step{Name: "boom", HumanReview: h, Func: func(context.Context, *StepInput) (FuncResult, error) {
			return FuncResult{}, fmt.Errorf("exploded")
		}}
	}
	wf := mustNew(t, Config{ID: "onerror", Steps: []Step{fn("a"), {Name: "p", Parallel: &Parallel{Steps: []Step{boom(&HumanReview{OnError: OnErrorSkip}), fn("b")}}}, fn("c")}})
	out, err := wf.Run(context.Background(), run.TextInput("in"))
	if err != nil || out.Status != run.StatusCompleted || !strings.HasSuffix(out.ContentString(), ">c") {
		t.Fatalf("run = %s %v %v", out.Status, out.Content, err)
	}
	p := out.StepResults[1]
	if p.Steps[0].StepName != "boom" || *p.Steps[0].Success || !strings.Contains(p.Steps[0].Error, "exploded") || *p.Success {
		t.Errorf("parallel = %+v", p)
	}
	wf = mustNew(t, Config{ID: "onerror-fail", Steps: []Step{{Name: "p", Parallel: &Parallel{Steps: []Step{boom(nil), boom(nil)}}}, fn("c")}})
	out, err = wf.Run(context.Background(), run.TextInput("in"))
	if err == nil || out.Status != run.StatusError || !strings.Contains(out.ContentString(), "exploded") {
		t.Errorf("run = %s %v %v", out.Status, out.Content, err)
	}
}

// TestStream_StepsInALoopOrAnElseNameThePrimitiveAsTheirParent: the
// parent_step_id of a step in a loop iteration or a Condition's Else is
// the primitive's step_id, as in Agno; it was the iteration's or branch's
// path ("0.i0", "1.else"), which names no step of the run.
func TestStream_StepsInALoopOrAnElseNameThePrimitiveAsTheirParent(t *testing.T) {
	t.Parallel()
	wf := mustNew(t, Config{ID: "parents", Steps: []Step{
		{Name: "l", Loop: &Loop{MaxIterations: 2, Steps: []Step{fn("a")}}},
		{Name: "c", Condition: &Condition{If: "false", Steps: []Step{fn("x")}, Else: []Step{fn("b")}}},
		{Name: "p", Parallel: &Parallel{Steps: []Step{fn("d")}}},
	}})
	ids := map[string]string{}       // a primitive's step_id by name
	parents := map[string][]string{} // the parent_step_ids of a step's StepStarted
	for _, e := range collect(t, wf, "in") {
		switch e.Event {
		case run.EventLoopExecutionStarted, run.EventConditionExecutionStarted, run.EventParallelExecutionStarted:
			ids[e.StepName] = e.StepID
		case run.EventStepStarted:
			parents[e.StepName] = append(parents[e.StepName], e.ParentStepID)
		}
	}
	for step, owner := range map[string]string{"a": "l", "b": "c", "d": "p"} {
		if len(parents[step]) == 0 || ids[owner] == "" {
			t.Fatalf("no events of %s in %s: %v %v", step, owner, ids, parents)
		}
		for _, p := range parents[step] {
			if p != ids[owner] {
				t.Errorf("%s: parent_step_id %q, want %s's step_id %q", step, p, owner, ids[owner])
			}
		}
	}
}

// TestRun_AStopInAParallelBranchLetsTheOtherBranchesFinish: a branch that
// stops the run stops it after the Parallel, as in Agno; the other
// branches run to their end. The stop was a flag of the run every
// sequence checked, so a sibling still running stopped after its current
// step (here, deterministically: its first step waits for the stop).
func TestRun_AStopInAParallelBranchLetsTheOtherBranchesFinish(t *testing.T) {
	t.Parallel()
	var after, next atomic.Int32
	stopped := make(chan struct{})
	var once sync.Once
	stop := Step{Name: "stop", Func: func(context.Context, *StepInput) (FuncResult, error) {
		return FuncResult{Content: "enough", Stop: true}, nil
	}}
	gate := Step{Name: "gate", Func: func(ctx context.Context, in *StepInput) (FuncResult, error) {
		<-stopped
		return FuncResult{Content: "through"}, nil
	}}
	wf := mustNew(t, Config{ID: "stop-sibling", Steps: []Step{
		{Name: "p", Parallel: &Parallel{Steps: []Step{stop, {Name: "rest", Steps: &Steps{Steps: []Step{gate, counted("after", &after)}}}}}},
		counted("next", &next)}})
	out, err := wf.Run(context.Background(), run.TextInput("in"), agent.WithEventFunc(func(e run.Event) {
		if e.Event == run.EventStepCompleted && e.StepName == "stop" {
			once.Do(func() { close(stopped) })
		}
	}))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run = %s, %v", out.Status, err)
	}
	if after.Load() != 1 || next.Load() != 0 {
		t.Errorf("after ran %d times (want 1: its branch finishes), next %d (want 0: the run stopped)", after.Load(), next.Load())
	}
	if len(out.StepResults) != 1 || !out.StepResults[0].Stop || len(out.StepResults[0].Steps) != 2 || len(out.StepResults[0].Steps[1].Steps) != 2 {
		t.Errorf("step results = %+v", out.StepResults)
	}
}
