package agentos

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/db"
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
	wf := reviewedFlow(t, d, nil)
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

// A workflow run paused at an agent step (the agent's run paused for a
// tool), then at a team step (the team's run paused by its member's),
// cancelled through the cancel route while nothing executes it: the runs
// under it that paused it are cancelled with it. They were left PAUSED,
// listed as waiting, and could be continued on their own through their
// agent's or team's routes, running the tool of a cancelled workflow.
func TestCancelRun_PausedWorkflowsPausedExecutorRunsAreCancelledWithIt(t *testing.T) {
	t.Parallel()
	alice := bearer(hsToken(t, jwt.MapClaims{"sub": "alice"}))
	for _, at := range []string{"agent step", "team step"} {
		t.Run(at, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "agentry.db")
			var deleted, deployed, drafts atomic.Int32
			url := tidyServer(t, path, &deleted, &deployed, &drafts)
			out, _ := pausedWorkflow(t, postForm(t, url+"/workflows/tidy/runs", map[string]string{"message": "tidy up", "stream": "false", "session_id": "s1"}, alice), false)
			runID := out["run_id"].(string)
			req := executorRequirement(t, out, "clean", "agent", "cleaner", "delete_file")
			if at == "team step" {
				fields := map[string]string{"step_requirements": confirmExecutor(t, req, true), "session_id": "s1", "stream": "false"}
				out, _ = pausedWorkflow(t, postForm(t, url+"/workflows/tidy/runs/"+runID+"/continue", fields, alice), false)
				executorRequirement(t, out, "ship", "team", "crew", "deploy") // paused at the team step
			}
			if res := do(t, http.MethodPost, url+"/workflows/tidy/runs/"+runID+"/cancel", nil, alice); res.status != http.StatusOK {
				t.Fatalf("cancel %d %s", res.status, res.body)
			}
			d := openTeamDB(t, path)
			ctx := context.Background()
			// Every run under the workflow run (the team's member's too).
			var under []db.Run
			parents := []string{runID}
			for len(parents) > 0 {
				p := parents[0]
				parents = parents[1:]
				rows, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: "s1", ParentRunID: p, Limit: 100, Page: 1})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rows {
					under = append(under, r)
					parents = append(parents, r.RunID)
				}
			}
			paused := 0
			for _, r := range under {
				switch r.Status {
				case run.StatusPaused:
					paused++
					t.Errorf("run %s (%s%s%s) under the cancelled workflow run is still PAUSED", r.RunID, r.AgentID, r.TeamID, r.WorkflowID)
				case run.StatusCancelled:
					if r.AgentID != "" {
						if res := postForm(t, url+"/agents/"+r.AgentID+"/runs/"+r.RunID+"/continue",
							map[string]string{"tools": `[{"tool_call_id":"call_0_0","confirmed":true}]`, "session_id": "s1", "stream": "false"}, alice); res.status != http.StatusConflict {
							t.Errorf("continuing agent run %s of the cancelled workflow: %d %s", r.RunID, res.status, res.body)
						}
					}
				}
			}
			if want := map[string]int{"agent step": 1, "team step": 3}[at]; len(under) != want {
				t.Errorf("%d runs under the workflow run, want %d", len(under), want)
			}
			if c := get(t, url+"/approvals/count", alice); strings.TrimSpace(c.body) != `{"count":0}` {
				t.Errorf("pending approvals after the cancel: %s", c.body)
			}
			if want := map[string]int32{"agent step": 0, "team step": 1}[at]; deleted.Load() != want || deployed.Load() != 0 {
				t.Errorf("tools ran after the cancel: deleted %d, deployed %d", deleted.Load(), deployed.Load())
			}
		})
	}
}
