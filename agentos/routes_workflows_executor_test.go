package agentos

import (
	"context"
	"encoding/json"
	"net/http"
	neturl "net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/workflow"
)

// tidyServer serves, under user isolation, workflow "tidy": agent "cleaner"
// deletes after a confirmation, then team "crew" whose member "ops" deploys
// after one. It also serves workflows "skip", "cancel" (a step that asks for
// a confirmation, then a step) and "retry" (a step whose output is reviewed,
// retried when rejected). It opens the SQLite file at path: a new call is a
// restarted server.
func tidyServer(t *testing.T, path string, deleted, deployed, drafts *atomic.Int32) string {
	t.Helper()
	d := openTeamDB(t, path)
	del := tool.MustFunc(tool.FuncConfig{Name: "delete_file", Description: "Deletes.", RequiresConfirmation: true},
		func(context.Context, struct{}) (string, error) { deleted.Add(1); return "gone", nil })
	cleaner, err := agent.New(agent.Config{ID: "cleaner", DB: d, Tools: []tool.Tool{del},
		Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{turn("delete_file", map[string]any{}), {Content: "cleaned"}}})})
	if err != nil {
		t.Fatal(err)
	}
	deploy := tool.MustFunc(tool.FuncConfig{Name: "deploy", Description: "Deploys.", RequiresConfirmation: true},
		func(context.Context, struct{}) (string, error) { deployed.Add(1); return "deployed", nil })
	ops, err := agent.New(agent.Config{ID: "ops", DB: d, Tools: []tool.Tool{deploy},
		Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{turn("deploy", map[string]any{}), {Content: "ops deployed"}}})})
	if err != nil {
		t.Fatal(err)
	}
	crew, err := team.New(team.Config{ID: "crew", DB: d, Members: []*agent.Agent{ops},
		Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{turn(team.ToolDelegate, map[string]any{"member_id": "ops", "task": "deploy"}), {Content: "the crew deployed"}}})})
	if err != nil {
		t.Fatal(err)
	}
	mark := func(name string) workflow.Step {
		return workflow.Step{Name: name, Func: func(_ context.Context, in *workflow.StepInput) (workflow.FuncResult, error) {
			return workflow.FuncResult{Content: run.ContentText(in.PreviousStepContent) + ">" + name}, nil
		}}
	}
	gate := func(onReject string) []workflow.Step {
		g := mark("gate")
		g.HumanReview = &workflow.HumanReview{RequiresConfirmation: true, ConfirmationMessage: "go on?", OnReject: onReject}
		return []workflow.Step{mark("before"), g, mark("after")}
	}
	draft := workflow.Step{Name: "draft", Func: func(_ context.Context, in *workflow.StepInput) (workflow.FuncResult, error) {
		return workflow.FuncResult{Content: "draft " + string(rune('0'+drafts.Add(1)))}, nil
	}, HumanReview: &workflow.HumanReview{RequiresOutputReview: true, OnReject: workflow.OnRejectRetry, MaxRetries: 2}}
	var wfs []*workflow.Workflow
	for _, c := range []workflow.Config{
		{ID: "tidy", DB: d, Steps: []workflow.Step{{Name: "clean", Runner: cleaner}, {Name: "ship", Runner: crew}}},
		{ID: "skip", DB: d, Steps: gate(workflow.OnRejectSkip)},
		{ID: "cancel", DB: d, Steps: gate(workflow.OnRejectCancel)},
		{ID: "retry", DB: d, Steps: []workflow.Step{draft, mark("publish")}},
	} {
		wf, err := workflow.New(c)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(wf.Close)
		wfs = append(wfs, wf)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{cleaner, ops}, Teams: []*team.Team{crew}, Workflows: wfs,
		UserIsolation: true, Auth: Auth{Authenticator: jwtAuthenticator(t, "")}}, nil)
	return ts.URL
}

// pausedWorkflow reads a workflow run's answer: the JSON body, or the last
// frame of its event stream (which must be WorkflowPaused or
// WorkflowCompleted) with the names of the frames before it.
func pausedWorkflow(t *testing.T, res response, stream bool) (map[string]any, []string) {
	t.Helper()
	if res.status != http.StatusOK {
		t.Fatalf("status %d %s", res.status, res.body)
	}
	if !stream {
		return decode[map[string]any](t, res), nil
	}
	frames := parseSSE(t, res.body)
	var names []string
	for _, f := range frames {
		names = append(names, f.name)
	}
	last := frames[len(frames)-1]
	var out map[string]any
	if err := json.Unmarshal([]byte(last.raw), &out); err != nil {
		t.Fatal(err)
	}
	return out, names
}

// executorRequirement checks the one step requirement of a paused workflow
// run in Agno's executor shape and returns it.
func executorRequirement(t *testing.T, out map[string]any, step, executorType, executorID, tool string) map[string]any {
	t.Helper()
	reqs, _ := out["step_requirements"].([]any)
	if out["status"] != "PAUSED" || len(reqs) != 1 {
		t.Fatalf("run %v: want PAUSED with one step requirement", out)
	}
	r := reqs[0].(map[string]any)
	for _, k := range []string{"step_id", "step_name", "step_type", "requires_executor_input", "executor_requirements", "executor_id",
		"executor_name", "executor_run_id", "executor_type", "executor_session_id"} {
		if _, ok := r[k]; !ok {
			t.Errorf("step requirement lacks %s: %v", k, r)
		}
	}
	ers, _ := r["executor_requirements"].([]any)
	if r["step_name"] != step || r["requires_executor_input"] != true || r["executor_type"] != executorType || r["executor_id"] != executorID || len(ers) != 1 {
		t.Fatalf("step requirement %v", r)
	}
	te, _ := ers[0].(map[string]any)["tool_execution"].(map[string]any)
	if te["tool_name"] != tool || te["requires_confirmation"] != true {
		t.Fatalf("executor requirement %v", ers[0])
	}
	return r
}

// confirmExecutor answers every tool of an executor step requirement.
func confirmExecutor(t *testing.T, r map[string]any, confirmed bool) string {
	t.Helper()
	for _, q := range r["executor_requirements"].([]any) {
		q.(map[string]any)["tool_execution"].(map[string]any)["confirmed"] = confirmed
	}
	b, err := json.Marshal([]any{r})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// An agent step and a team step pausing for a tool confirmation, continued
// through the continue route (streamed and not) on a restarted server each
// time: the workflow resumes the same agent run and the same team run and
// completes; another user gets 404.
func TestWorkflowRoutes_ExecutorPauseContinuedAfterRestart(t *testing.T) {
	t.Parallel()
	alice := bearer(hsToken(t, jwt.MapClaims{"sub": "alice"}))
	bob := bearer(hsToken(t, jwt.MapClaims{"sub": "bob"}))
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[stream], func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "agentry.db")
			var deleted, deployed, drafts atomic.Int32
			url := tidyServer(t, path, &deleted, &deployed, &drafts)
			sf := map[bool]string{false: "false", true: "true"}[stream]
			out, names := pausedWorkflow(t, postForm(t, url+"/workflows/tidy/runs", map[string]string{"message": "tidy up", "stream": sf, "session_id": "s1"}, alice), stream)
			if stream {
				got := strings.Join(names, " ")
				if !strings.Contains(got, "StepExecutorPaused") || !strings.Contains(got, "RunPaused") || names[len(names)-1] != "WorkflowPaused" {
					t.Errorf("first leg's events %s", got)
				}
			}
			runID := out["run_id"].(string)
			clean := executorRequirement(t, out, "clean", "agent", "cleaner", "delete_file")
			agentRun := clean["executor_run_id"].(string)
			runURL := url + "/workflows/tidy/runs/" + runID

			// GET shows the stored run PAUSED with the same requirement.
			stored := decode[map[string]any](t, get(t, runURL+"?session_id=s1", alice))
			if executorRequirement(t, stored, "clean", "agent", "cleaner", "delete_file")["executor_run_id"] != agentRun || stored["pause_kind"] != "executor" {
				t.Errorf("GET run %v", stored)
			}
			if _, ok := stored[workflow.JournalKey]; ok {
				t.Error("GET run shows the workflow's resume journal")
			}
			if res := get(t, runURL+"?session_id=s1", bob); res.status != http.StatusNotFound {
				t.Errorf("bob GET = %d", res.status)
			}

			// A new server on the same file; bob cannot continue it.
			url = tidyServer(t, path, &deleted, &deployed, &drafts)
			runURL = url + "/workflows/tidy/runs/" + runID
			fields := map[string]string{"step_requirements": confirmExecutor(t, clean, true), "session_id": "s1", "stream": sf}
			if res := postForm(t, runURL+"/continue", fields, bob); res.status != http.StatusNotFound {
				t.Fatalf("bob continue = %d %s", res.status, res.body)
			}
			if deleted.Load() != 0 {
				t.Fatal("the tool ran for bob")
			}
			out, names = pausedWorkflow(t, postForm(t, runURL+"/continue", fields, alice), stream)
			if stream {
				got := strings.Join(names, " ")
				for _, want := range []string{"StepExecutorContinued", "RunContinued", "RunCompleted", "TeamRunPaused", "StepExecutorPaused"} {
					if !strings.Contains(got, want) {
						t.Errorf("second leg's events %s\nmiss %s", got, want)
					}
				}
			}
			ship := executorRequirement(t, out, "ship", "team", "crew", "deploy")
			teamRun := ship["executor_run_id"].(string)
			if deleted.Load() != 1 || out["run_id"] != runID {
				t.Fatalf("deleted %d, run %v", deleted.Load(), out["run_id"])
			}

			// Again on a new server: the team's member run goes on, the workflow completes.
			url = tidyServer(t, path, &deleted, &deployed, &drafts)
			runURL = url + "/workflows/tidy/runs/" + runID
			fields["step_requirements"] = confirmExecutor(t, ship, true)
			out, names = pausedWorkflow(t, postForm(t, runURL+"/continue", fields, alice), stream)
			if stream {
				out["status"] = map[bool]any{true: "COMPLETED"}[names[len(names)-1] == "WorkflowCompleted"]
			}
			if out["status"] != "COMPLETED" || out["content"] != "the crew deployed" || deployed.Load() != 1 || deleted.Load() != 1 {
				t.Fatalf("final %v %v; deployed %d deleted %d", out["status"], out["content"], deployed.Load(), deleted.Load())
			}
			if stream && (!strings.Contains(strings.Join(names, " "), "TeamRunContinued") || names[len(names)-1] != "WorkflowCompleted") {
				t.Errorf("third leg's events %v", names)
			}
			if res := postForm(t, runURL+"/continue", fields, alice); res.status != http.StatusConflict {
				t.Errorf("continuing a completed run = %d", res.status)
			}

			// The same agent run and team run were resumed: one of each, completed, under the workflow run.
			d := openTeamDB(t, path)
			for _, id := range []string{agentRun, teamRun} {
				row, err := d.GetRun(context.Background(), id)
				if err != nil || row.Status != run.StatusCompleted || row.ParentRunID != runID {
					t.Errorf("executor run %s: %+v %v", id, row, err)
				}
			}
			var cleanerRuns, crewRuns int
			for _, r := range decode[[]map[string]any](t, get(t, url+"/sessions/s1/runs?type=workflow", alice)) {
				if r["agent_id"] == "cleaner" {
					cleanerRuns++
				}
				if r["team_id"] == "crew" {
					crewRuns++
				}
			}
			if cleanerRuns != 1 || crewRuns != 1 {
				t.Errorf("%d cleaner runs and %d crew runs in the session, want one of each", cleanerRuns, crewRuns)
			}
			if storedStatus(d, runID) != run.StatusCompleted {
				t.Errorf("stored %s", storedStatus(d, runID))
			}
		})
	}
}

// pendingApproval is the one pending approval of a run in alice's queue.
func pendingApproval(t *testing.T, url, runID string, who map[string]string) map[string]any {
	t.Helper()
	list := decode[map[string]any](t, get(t, url+"/approvals?status=pending&run_id="+runID, who))
	data, _ := list["data"].([]any)
	if len(data) != 1 {
		t.Fatalf("pending approvals of %s: %v", runID, list)
	}
	return data[0].(map[string]any)
}

func resolveApprovalAs(t *testing.T, url string, ap map[string]any, status, data string, who map[string]string) map[string]any {
	t.Helper()
	body := `{"status":"` + status + `"`
	if data != "" {
		body += `,"resolution_data":` + data
	}
	hdr := map[string]string{"Content-Type": "application/json"}
	for k, v := range who {
		hdr[k] = v
	}
	res := do(t, http.MethodPost, url+"/approvals/"+neturl.PathEscape(ap["id"].(string))+"/resolve", strings.NewReader(body+"}"), hdr)
	if res.status != http.StatusOK {
		t.Fatalf("resolve %s = %d %s", ap["id"], res.status, res.body)
	}
	return decode[map[string]any](t, res)
}

// Resolving a workflow run's approval through /approvals, on a restarted
// server, continues the run: approved goes on, rejected applies the step's
// OnReject (skip, cancel, retry), and an agent or team step waiting for a
// tool confirmation resumes its own run. Another user cannot resolve it.
func TestApprovals_ResolvingAWorkflowApprovalContinuesItsRun(t *testing.T) {
	t.Parallel()
	alice := bearer(hsToken(t, jwt.MapClaims{"sub": "alice"}))
	bob := bearer(hsToken(t, jwt.MapClaims{"sub": "bob"}))
	for _, tc := range []struct {
		name, workflow, status, data string
		want                         run.Status
		content                      string // the run's content ends so
	}{
		{"skip approved", "skip", "approved", "", run.StatusCompleted, ">before>gate>after"},
		{"skip rejected", "skip", "rejected", `{"note":"not now"}`, run.StatusCompleted, ">before>after"},
		{"cancel rejected", "cancel", "rejected", "", run.StatusCancelled, ""},
		{"cancel approved", "cancel", "approved", "", run.StatusCompleted, ">before>gate>after"},
		{"retry rejected then approved", "retry", "rejected", `{"rejection_feedback":"shorter"}`, run.StatusCompleted, "draft 2>publish"},
		{"retry approved", "retry", "approved", "", run.StatusCompleted, "draft 1>publish"},
		{"executor approved", "tidy", "approved", "", run.StatusCompleted, "the crew deployed"},
		{"executor rejected", "tidy", "rejected", `{"note":"keep it"}`, run.StatusCompleted, "the crew deployed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "agentry.db")
			var deleted, deployed, drafts atomic.Int32
			url := tidyServer(t, path, &deleted, &deployed, &drafts)
			out := decode[map[string]any](t, postForm(t, url+"/workflows/"+tc.workflow+"/runs", map[string]string{"message": "go", "stream": "false", "session_id": "s1"}, alice))
			if out["status"] != "PAUSED" {
				t.Fatalf("run %v", out)
			}
			runID := out["run_id"].(string)
			url = tidyServer(t, path, &deleted, &deployed, &drafts)
			ap := pendingApproval(t, url, runID, alice)
			if ap["source_type"] != "workflow" || ap["workflow_id"] != tc.workflow || ap["run_status"] != "PAUSED" {
				t.Fatalf("approval %v", ap)
			}
			hdr := map[string]string{"Content-Type": "application/json"}
			for k, v := range bob {
				hdr[k] = v
			}
			if res := do(t, http.MethodPost, url+"/approvals/"+neturl.PathEscape(ap["id"].(string))+"/resolve", strings.NewReader(`{"status":"approved"}`), hdr); res.status != http.StatusNotFound {
				t.Fatalf("bob resolving = %d %s", res.status, res.body)
			}
			after := resolveApprovalAs(t, url, ap, tc.status, tc.data, alice)
			if after["status"] != tc.status || after["resolved_by"] != "alice" {
				t.Errorf("approval after resolve %v", after)
			}
			// What pauses again (the retried draft, the team step) is a new
			// approval, resolved by approving it, on yet another server.
			for range 2 {
				d := openTeamDB(t, path)
				if storedStatus(d, runID) != run.StatusPaused {
					break
				}
				url = tidyServer(t, path, &deleted, &deployed, &drafts)
				next := pendingApproval(t, url, runID, alice)
				if next["id"] == ap["id"] {
					t.Fatalf("the run is still paused on the resolved approval %v", next)
				}
				resolveApprovalAs(t, url, next, "approved", "", alice)
			}
			d := openTeamDB(t, path)
			row, err := d.GetRun(context.Background(), runID)
			if err != nil || row.Status != tc.want {
				t.Fatalf("run %s %v, want %s", row.Status, err, tc.want)
			}
			final, err := row.Output()
			if err != nil {
				t.Fatal(err)
			}
			if tc.content != "" && !strings.HasSuffix(run.ContentText(final.Content), tc.content) {
				t.Errorf("content %q, want it to end %q", run.ContentText(final.Content), tc.content)
			}
			if tc.workflow == "tidy" {
				want := map[string]int32{"approved": 1, "rejected": 0}[tc.status]
				if deleted.Load() != want || deployed.Load() != 1 {
					t.Errorf("deleted %d (want %d), deployed %d", deleted.Load(), want, deployed.Load())
				}
			}
			if n := decode[map[string]any](t, get(t, url+"/approvals/count", alice)); n["count"] != float64(0) {
				t.Errorf("pending after %v", n)
			}
		})
	}
}
