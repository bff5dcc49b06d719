package agentos

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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
	ts, _ := queuedServer(t, Config{Agents: []*agent.Agent{cleaner}, Workflows: []*workflow.Workflow{wf}})
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

// A paused background run continued through the continue route, and
// another through its approval, hold their jobs while they run (running,
// locked by this node) and end them with the run's final save: each job is
// completed when the answer comes. They stayed paused (until the repair's
// pass over paused jobs, a minute later), listed and counted as waiting.
func TestContinue_DurablePausedRunsJobEndsWithTheContinue(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	var during []string
	var srv *Server
	jobStatus := func(id string) string {
		j, err := srv.queue.Get(context.Background(), id, "", false)
		if err != nil {
			return err.Error()
		}
		return j.Status + " on " + j.LockedBy
	}
	var current string
	del := tool.MustFunc(tool.FuncConfig{Name: "delete_file", Description: "Deletes.", RequiresConfirmation: true},
		func(context.Context, struct{}) (string, error) {
			during = append(during, jobStatus(current))
			return "gone", nil
		})
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{turn("delete_file", map[string]any{}), {Content: "done"}}})
	a, err := agent.New(agent.Config{ID: "hitl", DB: d, Tools: []tool.Tool{del}, Model: m})
	if err != nil {
		t.Fatal(err)
	}
	ts, srv := queuedServer(t, Config{Agents: []*agent.Agent{a}})
	pause := func() string {
		acc := accepted(t, postForm(t, ts.URL+"/agents/hitl/runs", map[string]string{"message": "delete it", "background": "true"}, nil))
		for deadline := time.Now().Add(30 * time.Second); jobStatus(acc.RunID) != "paused on " || !strings.Contains(get(t, ts.URL+"/approvals?run_id="+acc.RunID, nil).body, `"pending"`); {
			if time.Now().After(deadline) {
				t.Fatalf("run %s: job %s", acc.RunID, jobStatus(acc.RunID))
			}
			time.Sleep(10 * time.Millisecond)
		}
		current = acc.RunID
		return acc.RunID
	}

	byRoute := pause()
	confirm := `[{"tool_call_id":"call_0_0","tool_name":"delete_file","requires_confirmation":true,"confirmed":true}]`
	out := decode[run.Output](t, postForm(t, ts.URL+"/agents/hitl/runs/"+byRoute+"/continue", map[string]string{"tools": confirm, "stream": "false"}, nil))
	if out.Status != run.StatusCompleted {
		t.Fatalf("continued run %s", out.Status)
	}
	if got := jobStatus(byRoute); got != "completed on " {
		t.Errorf("the job after the continue route's answer: %s", got)
	}

	byApproval := pause()
	list := decode[map[string]any](t, get(t, ts.URL+"/approvals?run_id="+byApproval, nil))
	id := list["data"].([]any)[0].(map[string]any)["id"].(string)
	if res := do(t, http.MethodPost, ts.URL+"/approvals/"+id+"/resolve", strings.NewReader(`{"status":"approved"}`),
		map[string]string{"Content-Type": "application/json"}); res.status != http.StatusOK {
		t.Fatalf("resolve %d %s", res.status, res.body)
	}
	if st := storedStatus(d, byApproval); st != run.StatusCompleted {
		t.Fatalf("run continued by its approval is %s", st)
	}
	if got := jobStatus(byApproval); got != "completed on " {
		t.Errorf("the job after the approval's answer: %s", got)
	}
	if len(during) != 2 || during[0] != "running on this-node" || during[1] != "running on this-node" {
		t.Errorf("the jobs while their continues ran the tool: %q", during)
	}
}

// MCP's continue_run holds the continue's lease as the continue route
// does: a run paused in the foreground (its lease released at the pause)
// gets a foreground lease while the continue runs, released after.
func TestMCP_ContinueRunHoldsALease(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	var srv *Server
	var runID, during string
	del := tool.MustFunc(tool.FuncConfig{Name: "delete_file", Description: "Deletes.", RequiresConfirmation: true},
		func(context.Context, struct{}) (string, error) {
			j, err := srv.queue.Get(context.Background(), runID, "", false)
			if err != nil {
				during = err.Error()
			} else {
				during = j.Status + " " + j.JobType + " on " + j.LockedBy
			}
			return "gone", nil
		})
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{turn("delete_file", map[string]any{}), {Content: "all done"}}})
	a, err := agent.New(agent.Config{ID: "hitl", DB: d, Tools: []tool.Tool{del}, Model: m})
	if err != nil {
		t.Fatal(err)
	}
	ts, srv := queuedServer(t, Config{Agents: []*agent.Agent{a}, MCP: MCP{Enabled: true}})
	cs := mcpConnect(t, ts.URL, "", nil)
	st := structured(t, callTool(t, cs, "run_agent", map[string]any{"agent_id": "hitl", "message": "delete it"}))
	reqs, _ := st["requirements"].([]any)
	if st["status"] != "PAUSED" || len(reqs) != 1 {
		t.Fatalf("paused result = %v", st)
	}
	runID = st["run_id"].(string)
	req := reqs[0].(map[string]any)
	req["tool_execution"].(map[string]any)["confirmed"] = true
	r := callTool(t, cs, "continue_run", map[string]any{"agent_id": "hitl", "run_id": runID, "session_id": st["session_id"], "requirements": []any{req}})
	if r.IsError || resultText(r) != "all done" {
		t.Fatalf("continue = %q", resultText(r))
	}
	if want := "running " + queue.JobTypeForeground + " on this-node"; during != want {
		t.Errorf("the run's job while continue_run ran its tool: %q, want %q", during, want)
	}
	if _, err := srv.queue.Get(context.Background(), runID, "", false); !errors.Is(err, queue.ErrNotFound) {
		t.Errorf("the continue's lease after continue_run: %v, want released", err)
	}
}

// A paused background workflow run continued through its continue route
// holds its job while the continue runs its steps, and the job ends with
// the run's final save.
func TestContinue_DurablePausedWorkflowHoldsItsJob(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	var srv *Server
	var runID, during string
	wf := reviewedFlow(t, d, func() {
		if j, err := srv.queue.Get(context.Background(), runID, "", false); err == nil {
			during = j.Status + " on " + j.LockedBy
		}
	})
	ts, srv := queuedServer(t, Config{Workflows: []*workflow.Workflow{wf}})
	acc := accepted(t, postForm(t, ts.URL+"/workflows/flow/runs", map[string]string{"message": "go", "background": "true"}, nil))
	runID = acc.RunID
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if j, err := srv.queue.Get(context.Background(), runID, "", false); err == nil && j.Status == queue.StatusPaused {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the workflow's job did not pause")
		}
	}
	row, err := d.GetRun(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := row.Output()
	if err != nil || len(out.StepRequirements) != 1 {
		t.Fatalf("paused workflow %+v: %v", out.StepRequirements, err)
	}
	answer := `[{"step_id":"` + out.StepRequirements[0].StepID + `","confirmed":true}]`
	res := postForm(t, ts.URL+"/workflows/flow/runs/"+runID+"/continue", map[string]string{"step_requirements": answer, "stream": "false"}, nil)
	if res.status != http.StatusOK {
		t.Fatalf("continue: %d %s", res.status, res.body)
	}
	if during != "running on this-node" {
		t.Errorf("the workflow's job while its continue ran the step: %q", during)
	}
	if j, err := srv.queue.Get(context.Background(), runID, "", false); err != nil || j.Status != queue.StatusCompleted {
		t.Errorf("the job after the continue's answer: %+v, %v", j, err)
	}
}

// queuedServer serves cfg with the durable queue (node "this-node", quick
// polls) on a test server, closed at the test's end.
func queuedServer(t *testing.T, cfg Config) (*httptest.Server, *Server) {
	t.Helper()
	cfg.Queue = &queue.Config{PollInterval: 20 * time.Millisecond, LockGrace: 2 * time.Second, NodeID: "this-node"}
	var srv *Server
	ts, _ := testServer(t, cfg, func(s *Server) { srv = s })
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	return ts, srv
}
