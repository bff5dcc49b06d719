package agentos

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/workflow"
)

// workflowFixture serves a workflow of every primitive, whose last step asks
// for a confirmation and a count, on the runs fixture's database.
func workflowFixture(t *testing.T, cfg Config) (*runsFixture, *db.DB) {
	t.Helper()
	mark := func(name string) workflow.Step {
		return workflow.Step{Name: name, Func: func(_ context.Context, in *workflow.StepInput) (workflow.FuncResult, error) {
			c := run.ContentText(in.PreviousStepContent) + ">" + name
			if in.UserInput != nil {
				b, _ := json.Marshal(in.UserInput)
				c += string(b)
			}
			return workflow.FuncResult{Content: c}, nil
		}}
	}
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "wf.db"), ID: "wf-db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	writer, err := agent.New(agent.Config{ID: "writer", Model: scripted.Reply("draft"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	ask := mark("ask")
	ask.HumanReview = &workflow.HumanReview{RequiresUserInput: true, UserInputSchema: []run.UserInputField{{Name: "count", FieldType: "int", Required: true}}}
	wf, err := workflow.New(workflow.Config{ID: "every", DB: d, Steps: []workflow.Step{
		{Runner: writer},
		{Name: "loop", Loop: &workflow.Loop{MaxIterations: 2, Steps: []workflow.Step{
			{Name: "fan", Parallel: &workflow.Parallel{Steps: []workflow.Step{mark("p1"), mark("p2")}}}}}},
		{Name: "cond", Condition: &workflow.Condition{If: `input == "go"`, Steps: []workflow.Step{mark("yes")}}},
		{Name: "route", Router: &workflow.Router{SelectorExpr: `"b"`, Choices: []workflow.Step{mark("a"), mark("b")}}},
		ask,
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wf.Close)
	cfg.Agents = append(cfg.Agents, writer)
	cfg.Workflows = []*workflow.Workflow{wf}
	return newRunsFixture(t, cfg), d
}

func TestWorkflowRoutes_PrimitivesPauseAndContinue(t *testing.T) {
	t.Parallel()
	f, d := workflowFixture(t, Config{UserIsolation: true, Auth: Auth{Authenticator: jwtAuthenticator(t, "")}})
	alice := bearer(hsToken(t, jwt.MapClaims{"sub": "alice"}))
	bob := bearer(hsToken(t, jwt.MapClaims{"sub": "bob"}))
	for _, stream := range []bool{false, true} {
		res := postForm(t, f.url+"/workflows/every/runs", map[string]string{"message": "go", "stream": map[bool]string{false: "false", true: "true"}[stream]}, alice)
		if res.status != http.StatusOK {
			t.Fatalf("start = %d %s", res.status, res.body)
		}
		var paused run.Output
		if stream {
			frames := parseSSE(t, res.body)
			var names []string
			for _, fr := range frames {
				if fr.data["agent_id"] == nil {
					names = append(names, fr.name)
				}
			}
			got := strings.Join(names, " ")
			for _, want := range []string{"WorkflowStarted StepStarted", "LoopExecutionStarted LoopIterationStarted ParallelExecutionStarted",
				"ParallelExecutionCompleted LoopIterationCompleted LoopIterationStarted", "LoopExecutionCompleted ConditionExecutionStarted StepStarted StepCompleted ConditionExecutionCompleted RouterExecutionStarted StepStarted StepCompleted RouterExecutionCompleted StepPaused WorkflowPaused"} {
				if !strings.Contains(got, want) {
					t.Errorf("stream %s\nmisses %s", got, want)
				}
			}
			last := frames[len(frames)-1]
			if last.name != "WorkflowPaused" {
				t.Fatalf("last frame %s", last.name)
			}
			if err := json.Unmarshal([]byte(last.raw), &paused); err != nil {
				t.Fatal(err)
			}
		} else {
			paused = decode[run.Output](t, res)
		}
		if paused.Status != run.StatusPaused || len(paused.StepRequirements) != 1 || paused.StepRequirements[0].StepName != "ask" {
			t.Fatalf("paused = %+v", paused)
		}
		runURL := f.url + "/workflows/every/runs/" + paused.RunID
		stored := decode[map[string]any](t, get(t, runURL, alice))
		if stored["status"] != "PAUSED" {
			t.Errorf("GET run = %v", stored)
		}
		req := paused.StepRequirements[0]
		answers := func(in map[string]any) string {
			r := req
			r.UserInput = in
			b, _ := json.Marshal([]run.StepRequirement{r})
			return string(b)
		}
		// The pause is in alice's review queue, not in bob's.
		queue := decode[map[string]any](t, get(t, f.url+"/approvals?db_id=wf-db&status=pending&run_id="+paused.RunID, alice))
		if data := queue["data"].([]any); len(data) != 1 || data[0].(map[string]any)["pause_type"] != "user_input" || data[0].(map[string]any)["workflow_id"] != "every" {
			t.Errorf("alice's queue = %v", queue)
		}
		if queue := decode[map[string]any](t, get(t, f.url+"/approvals?db_id=wf-db", bob)); len(queue["data"].([]any)) != 0 {
			t.Errorf("bob's queue = %v", queue)
		}
		// Bob cannot see or continue alice's run.
		if res := get(t, runURL, bob); res.status != http.StatusNotFound {
			t.Errorf("bob GET = %d", res.status)
		}
		if res := postForm(t, runURL+"/continue", map[string]string{"step_requirements": answers(map[string]any{"count": 2}), "stream": "false"}, bob); res.status != http.StatusNotFound {
			t.Errorf("bob continue = %d %s", res.status, res.body)
		}
		// Input that does not fit the schema is 422 and leaves the run paused.
		if res := postForm(t, runURL+"/continue", map[string]string{"step_requirements": answers(map[string]any{"count": "two"}), "stream": "false"}, alice); res.status != http.StatusUnprocessableEntity {
			t.Errorf("bad input = %d %s", res.status, res.body)
		}
		// Malformed step_requirements are 400, as Agno: JSON that does not
		// parse, and JSON that is not an array of step requirements.
		if res := postForm(t, runURL+"/continue", map[string]string{"step_requirements": "not json"}, alice); res.status != http.StatusBadRequest ||
			!strings.Contains(res.body, "Invalid JSON in step_requirements field") {
			t.Errorf("not json = %d %s", res.status, res.body)
		}
		if res := postForm(t, runURL+"/continue", map[string]string{"step_requirements": `{"step_id":"x"}`}, alice); res.status != http.StatusBadRequest ||
			!strings.Contains(res.body, "Invalid structure or content for step_requirements") {
			t.Errorf("not an array = %d %s", res.status, res.body)
		}
		if storedStatus(d, paused.RunID) != run.StatusPaused {
			t.Errorf("a refused continue changed the run: %s", storedStatus(d, paused.RunID))
		}
		cont := postForm(t, runURL+"/continue", map[string]string{"step_requirements": answers(map[string]any{"count": 2}),
			"stream": map[bool]string{false: "false", true: "true"}[stream]}, alice)
		if cont.status != http.StatusOK {
			t.Fatalf("continue = %d %s", cont.status, cont.body)
		}
		if stream {
			frames := parseSSE(t, cont.body)
			if last := frames[len(frames)-1]; last.name != "WorkflowCompleted" || !strings.HasSuffix(last.data["content"].(string), `>ask{"count":2}`) {
				t.Errorf("continue stream ends %s %v", last.name, last.data["content"])
			}
		} else if out := decode[run.Output](t, cont); out.Status != run.StatusCompleted || !strings.HasSuffix(out.ContentString(), `>b>ask{"count":2}`) {
			t.Errorf("continued = %s %v", out.Status, out.Content)
		}
		done := decode[map[string]any](t, get(t, f.url+"/approvals?db_id=wf-db&run_id="+paused.RunID, alice))
		if ap := done["data"].([]any)[0].(map[string]any); ap["status"] != "approved" || ap["run_status"] != "COMPLETED" || ap["resolved_by"] != "alice" {
			t.Errorf("approval after continue = %v", ap)
		}
		if storedStatus(d, paused.RunID) != run.StatusCompleted {
			t.Errorf("stored %s", storedStatus(d, paused.RunID))
		}
		if res := postForm(t, runURL+"/continue", map[string]string{"step_requirements": answers(map[string]any{"count": 2}), "stream": "false"}, alice); res.status != http.StatusConflict {
			t.Errorf("second continue = %d", res.status)
		}
	}
	desc := get(t, f.url+"/workflows/every", alice)
	if !strings.Contains(desc.body, `{"name":"loop","step_type":"Loop","executor_type":"loop","steps":[{"name":"fan","step_type":"Parallel"`) {
		t.Errorf("GET workflow = %s", desc.body)
	}
}
