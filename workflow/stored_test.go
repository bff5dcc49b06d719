package workflow

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// TestRun_StoresAgnosWorkflowRunShape: a workflow run is stored as Agno's
// WorkflowRunOutput: the input as the bare value, step_results as
// StepOutputs, metrics as WorkflowMetrics (duration and steps by name), so a
// Python Agno 3.0 process reads it.
func TestRun_StoresAgnosWorkflowRunShape(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		d := openDB(t)
		wf, err := New(Config{ID: "draft-review", Name: "Draft and review", DB: d, Steps: []Step{
			{Name: "draft", Runner: newAgent(t, "drafter", scripted.Reply("a first draft"), d)},
			{Name: "review", Runner: newAgent(t, "reviewer", scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{Error: "model down", ErrorKind: "bad_request"}}}), d)},
		}})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if stream {
			for _, err := range wf.Stream(ctx, run.TextInput("write about Go"), agent.WithSessionID("s1")) {
				_ = err
			}
		} else {
			_, _ = wf.Run(ctx, run.TextInput("write about Go"), agent.WithSessionID("s1"))
		}
		var data []byte
		var stepRun string
		for _, r := range runsOf(t, d, "s1") {
			switch {
			case r.RunType == run.TypeWorkflow:
				data = r.RunData
			case r.AgentID == "drafter":
				stepRun = r.RunID
			}
		}
		want := `{"workflow_id":"draft-review","workflow_name":"Draft and review","input":"write about Go","status":"ERROR",
			"step_results":[
				{"step_name":"draft","step_type":"Step","executor_type":"agent","executor_name":"drafter","step_run_id":"` + stepRun + `","content":"a first draft","success":true},
				{"step_name":"review","step_type":"Step","executor_type":"agent","executor_name":"reviewer","success":false}],
			"metrics":{"steps":{
				"draft":{"step_name":"draft","executor_type":"agent","executor_name":"drafter"},
				"review":{"step_name":"review","executor_type":"agent","executor_name":"reviewer"}}}}`
		if d := jsontest.MissingFrom([]byte(want), data); d != "" {
			t.Errorf("stream=%v: stored run_data: %s\n%s", stream, d, data)
		}
		var o run.Output
		if err := json.Unmarshal(data, &o); err != nil {
			t.Fatal(err)
		}
		if len(o.StepResults) != 2 || o.StepResults[1].Error == "" || o.Metrics.Duration == 0 ||
			o.Metrics.Steps["draft"].Metrics == nil || o.Metrics.Steps["draft"].Metrics.Duration == 0 {
			t.Errorf("stream=%v: decoded step results %+v, metrics %+v", stream, o.StepResults, o.Metrics)
		}
	}
}

// TestRun_AConditionNotMetIsStoredAsAgnoWordsIt: a Condition whose branch
// did not run (false, no Else) has Agno's content in step_results (it had
// the content it was given) and in a Parallel's results, and its
// ConditionExecutionCompleted has no branch (it said else); the next step
// still gets what the Condition got.
func TestRun_AConditionNotMetIsStoredAsAgnoWordsIt(t *testing.T) {
	t.Parallel()
	const notMet = "Condition check not met - skipped 2 steps"
	check := Step{Name: "check", Condition: &Condition{If: "false", Steps: []Step{fn("x"), fn("y")}}}
	wf := mustNew(t, Config{ID: "not-met", Steps: []Step{fn("a"), check, fn("b")}})
	evs := collect(t, wf, "in")
	last := evs[len(evs)-1]
	if last.Event != run.EventWorkflowCompleted || last.Content != "in>a>b" {
		t.Fatalf("run ended %s %v", last.Event, last.Content)
	}
	if c := last.StepResults[1]; c.StepName != "check" || c.Content != notMet {
		t.Errorf("condition result = %+v", c)
	}
	for _, e := range evs {
		if e.Event == run.EventConditionExecutionCompleted && (e.Branch != "" || *e.ConditionResult) {
			t.Errorf("ConditionExecutionCompleted branch %q, result %v", e.Branch, *e.ConditionResult)
		}
	}
	wf = mustNew(t, Config{ID: "not-met-parallel", Steps: []Step{{Name: "p", Parallel: &Parallel{Steps: []Step{check, fn("b")}}}}})
	out, err := wf.Run(context.Background(), run.TextInput("in"))
	if err != nil || !strings.Contains(out.ContentString(), "### ✅ SUCCESS: check\n"+notMet+"\n") {
		t.Errorf("parallel = %q, %v", out.ContentString(), err)
	}
}
