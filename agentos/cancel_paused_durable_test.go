package agentos

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/workflow"
)

// A background (durable) workflow run paused at an agent step, whose
// agent's run paused for a tool's confirmation, cancelled through the
// cancel route: the queue cancels its paused job and stores the run
// CANCELLED, and the run is then left as the route leaves a paused run it
// cancels itself (markCancelled): no step requirements or paused step on
// it, its approval no longer pending, the agent's run under it cancelled
// too. Through the queue's cancel, all three were left: the approval
// pending and counted, the workflow row awaiting a step, and the agent's
// run PAUSED, continuable through its own route.
func TestCancelRun_DurablePausedWorkflowIsLeftWaitingForNothing(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	deleted := 0
	del := tool.MustFunc(tool.FuncConfig{Name: "delete_file", Description: "Deletes.", RequiresConfirmation: true},
		func(context.Context, struct{}) (string, error) { deleted++; return "gone", nil })
	cleaner, err := agent.New(agent.Config{ID: "cleaner", DB: d, Tools: []tool.Tool{del},
		Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{turn("delete_file", map[string]any{}), {Content: "cleaned"}}})})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := workflow.New(workflow.Config{ID: "tidy", DB: d, Steps: []workflow.Step{{Name: "clean", Runner: cleaner}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wf.Close)
	qc := queue.Config{PollInterval: 20 * time.Millisecond, LockGrace: 2 * time.Second}
	var srv *Server
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{cleaner}, Workflows: []*workflow.Workflow{wf}, Queue: &qc}, func(s *Server) { srv = s })
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	acc := accepted(t, postForm(t, ts.URL+"/workflows/tidy/runs", map[string]string{"message": "tidy up", "background": "true", "session_id": "s1"}, nil))
	waitStatus(t, d, acc.RunID, run.StatusPaused)
	// The worker stores the run PAUSED, then its approval, then ends the
	// job paused: wait for all three.
	for deadline := time.Now().Add(30 * time.Second); ; {
		c := get(t, ts.URL+"/approvals/count", nil)
		job := get(t, ts.URL+"/queue/jobs/"+acc.RunID, nil)
		if strings.TrimSpace(c.body) == `{"count":1}` && strings.Contains(job.body, `"status":"paused"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pending approvals of the paused run: %s; its job: %s", c.body, job.body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if res := do(t, http.MethodPost, ts.URL+"/workflows/tidy/runs/"+acc.RunID+"/cancel", nil, nil); res.status != http.StatusOK {
		t.Fatalf("cancel %d %s", res.status, res.body)
	}
	ctx := context.Background()
	row, err := d.GetRun(ctx, acc.RunID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := row.Output()
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != run.StatusCancelled || out.StepRequirements != nil || out.Requirements != nil || out.PausedStepIndex != nil ||
		out.PausedStepName != "" || out.PauseKind != "" {
		t.Errorf("cancelled run stored %s with step_requirements %+v, requirements %+v, paused at %v %q (%q)", out.Status,
			out.StepRequirements, out.Requirements, out.PausedStepIndex, out.PausedStepName, out.PauseKind)
	}
	under, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: "s1", ParentRunID: acc.RunID, Limit: 100, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(under) != 1 {
		t.Fatalf("%d runs under the workflow run, want the agent step's", len(under))
	}
	if under[0].Status != run.StatusCancelled {
		t.Errorf("the agent step's run under the cancelled workflow run is %s", under[0].Status)
	}
	if res := postForm(t, ts.URL+"/agents/cleaner/runs/"+under[0].RunID+"/continue",
		map[string]string{"tools": `[{"tool_call_id":"call_0_0","confirmed":true}]`, "session_id": "s1", "stream": "false"}, nil); res.status != http.StatusConflict {
		t.Errorf("continuing the agent step's run of the cancelled workflow: %d %s", res.status, res.body)
	}
	if c := get(t, ts.URL+"/approvals/count", nil); strings.TrimSpace(c.body) != `{"count":0}` {
		t.Errorf("pending approvals after the cancel: %s", c.body)
	}
	if job := get(t, ts.URL+"/queue/jobs/"+acc.RunID, nil); !strings.Contains(job.body, `"cancelled while paused"`) {
		t.Errorf("the cancelled job: %d %s", job.status, job.body)
	}
	if deleted != 0 {
		t.Errorf("the tool ran %d times after the cancel", deleted)
	}
}
