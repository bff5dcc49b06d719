package agentos

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/workflow"
)

// A paused agent run that nothing executes, cancelled through the cancel
// route, is CANCELLED with its approval no longer pending (expired, its
// run_status CANCELLED), as when the run ends any other way: it was left
// pending, listed and counted for a person to decide on a run that waits
// for nothing.
func TestCancelRun_PausedAgentRunsApprovalIsNoLongerPending(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	paused := decode[run.Output](t, postForm(t, f.url+"/agents/hitl/runs", map[string]string{"message": "delete", "stream": "false"}, nil))
	if paused.Status != run.StatusPaused {
		t.Fatalf("run %s", paused.Status)
	}
	if res := do(t, http.MethodPost, f.url+"/agents/hitl/runs/"+paused.RunID+"/cancel", nil, nil); res.status != http.StatusOK {
		t.Fatalf("cancel %d %s", res.status, res.body)
	}
	if c := get(t, f.url+"/approvals/count", nil); strings.TrimSpace(c.body) != `{"count":0}` {
		t.Errorf("pending approvals after the cancel: %s", c.body)
	}
	list := decode[map[string]any](t, get(t, f.url+"/approvals?run_id="+paused.RunID, nil))
	data := list["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("approvals %v", list)
	}
	if ap := data[0].(map[string]any); ap["status"] != "expired" || ap["run_status"] != "CANCELLED" {
		t.Errorf("approval after the cancel %v", ap)
	}
}

// A paused workflow run cancelled through the cancel route is stored as a
// workflow that ends CANCELLED stores itself: no step requirements or
// paused step left on it (a client reading it would see a cancelled run
// awaiting a step), and its approvals no longer pending.
func TestCancelRun_PausedWorkflowRunWaitsForNothing(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	step := workflow.Step{Name: "review", Func: func(context.Context, *workflow.StepInput) (workflow.FuncResult, error) {
		return workflow.FuncResult{Content: "reviewed"}, nil
	}, HumanReview: &workflow.HumanReview{RequiresConfirmation: true}}
	wf, err := workflow.New(workflow.Config{ID: "flow", Name: "Flow", DB: d, Steps: []workflow.Step{step}})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Workflows: []*workflow.Workflow{wf}}, nil)
	paused := decode[run.Output](t, postForm(t, ts.URL+"/workflows/flow/runs", map[string]string{"message": "go", "stream": "false"}, nil))
	if paused.Status != run.StatusPaused || len(paused.StepRequirements) != 1 {
		t.Fatalf("run %s %+v", paused.Status, paused.StepRequirements)
	}
	if c := get(t, ts.URL+"/approvals/count", nil); strings.TrimSpace(c.body) != `{"count":1}` {
		t.Fatalf("pending approvals of the paused run: %s", c.body)
	}
	if res := do(t, http.MethodPost, ts.URL+"/workflows/flow/runs/"+paused.RunID+"/cancel", nil, nil); res.status != http.StatusOK {
		t.Fatalf("cancel %d %s", res.status, res.body)
	}
	row, err := d.GetRun(context.Background(), paused.RunID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := row.Output()
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != run.StatusCancelled || out.StepRequirements != nil || out.ErrorRequirements != nil || out.PausedStepIndex != nil ||
		out.PausedStepName != "" || out.PauseKind != "" {
		t.Errorf("cancelled run stored %s with step_requirements %+v, paused at %v %q (%q)", out.Status, out.StepRequirements,
			out.PausedStepIndex, out.PausedStepName, out.PauseKind)
	}
	if c := get(t, ts.URL+"/approvals/count", nil); strings.TrimSpace(c.body) != `{"count":0}` {
		t.Errorf("pending approvals after the cancel: %s", c.body)
	}
}
