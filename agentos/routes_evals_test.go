package agentos

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
)

// newEvalFixture adds an agent "judged" whose scripted model answers every
// request with a verdict, so it is both the target and (as Agno's default)
// the judge of its evals.
func newEvalFixture(t *testing.T) fixture {
	t.Helper()
	return newFixtureWith(t, Config{}, func(f *fixture, _ *agent.Agent, cfg *Config) {
		a, err := agent.New(agent.Config{ID: "judged", Name: "Judged", DB: f.db,
			Model: scripted.Reply(`{"accuracy_score": 8, "accuracy_reason": "fine", "passed": true, "reason": "meets it"}`)})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Agents = append(cfg.Agents, a)
	})
}

func TestEvalRuns_CreateEachKindListGetRenameDelete(t *testing.T) {
	t.Parallel()
	f := newEvalFixture(t)
	post := func(body string) response {
		return do(t, "POST", f.url+"/eval-runs", strings.NewReader(body), jsonHeader)
	}
	ids := map[string]string{}
	for typ, body := range map[string]string{
		"accuracy":       `{"agent_id":"judged","eval_type":"accuracy","input":"q","expected_output":"a","num_iterations":2,"name":"acc"}`,
		"agent_as_judge": `{"agent_id":"judged","eval_type":"agent_as_judge","input":"q","criteria":"is JSON"}`,
		"performance":    `{"agent_id":"echo","eval_type":"performance","input":"q","num_iterations":3,"warmup_runs":1}`,
		"reliability":    `{"agent_id":"echo","eval_type":"reliability","input":"q","expected_tool_calls":["search"]}`,
	} {
		res := post(body)
		if res.status != 200 {
			t.Fatalf("%s: %d %s", typ, res.status, res.body)
		}
		v := decode[map[string]any](t, res)
		data, _ := v["eval_data"].(map[string]any)
		if v["eval_type"] != typ || v["id"] == "" || data == nil || v["created_at"] == nil {
			t.Fatalf("%s: %s", typ, res.body)
		}
		ids[typ] = v["id"].(string)
		switch typ {
		case "accuracy":
			if data["avg_score"] != 8.0 || v["name"] != "acc" || v["agent_id"] != "judged" || v["model_id"] != "scripted" {
				t.Errorf("accuracy: %s", res.body)
			}
		case "agent_as_judge":
			if data["pass_rate"] != 100.0 {
				t.Errorf("agent_as_judge: %s", res.body)
			}
		case "performance":
			if runs, _ := data["run_times"].([]any); len(runs) != 3 {
				t.Errorf("performance: %s", res.body)
			}
		case "reliability":
			if data["eval_status"] != "FAILED" || v["eval_input"].(map[string]any)["expected_tool_calls"].([]any)[0] != "search" {
				t.Errorf("reliability: %s", res.body)
			}
		}
	}
	// Agno's route makes no warmup runs unless asked (warmup_runs 0), where
	// the library's default is 10.
	noWarmup := decode[map[string]any](t, post(`{"agent_id":"echo","eval_type":"performance","input":"q","num_iterations":2}`))
	if in, _ := noWarmup["eval_input"].(map[string]any); in == nil || in["warmup_runs"] != 0.0 {
		t.Errorf("performance without warmup_runs: eval_input %v, want warmup_runs 0", noWarmup["eval_input"])
	}
	if res := do(t, "DELETE", f.url+"/eval-runs", strings.NewReader(`{"eval_run_ids":["`+noWarmup["id"].(string)+`"]}`), jsonHeader); res.status != 204 {
		t.Fatalf("delete = %d %s", res.status, res.body)
	}
	page := decode[struct {
		Data []evalView
		Meta map[string]any
	}](t, get(t, f.url+"/eval-runs?limit=3&page=1&sort_order=asc", nil))
	if len(page.Data) != 3 || page.Meta["total_count"] != 4.0 || page.Meta["total_pages"] != 2.0 {
		t.Errorf("page = %+v", page)
	}
	only := decode[struct{ Data []evalView }](t, get(t, f.url+"/eval-runs?eval_types=accuracy,agent_as_judge&agent_id=judged", nil))
	if len(only.Data) != 2 {
		t.Errorf("filtered = %+v", only.Data)
	}
	if res := get(t, f.url+"/eval-runs?type=team", nil); !strings.Contains(res.body, `"data":[]`) {
		t.Errorf("type=team = %s", res.body)
	}
	got := decode[evalView](t, get(t, f.url+"/eval-runs/"+ids["accuracy"], nil))
	if got.ID != ids["accuracy"] || got.EvaluatedComponentName == nil || *got.EvaluatedComponentName != "Judged" {
		t.Errorf("get = %+v", got)
	}
	// A performance eval is answered flat and stored as Agno stores it
	// (result and runs), which a read returns.
	perf := decode[map[string]any](t, get(t, f.url+"/eval-runs/"+ids["performance"], nil))
	stored, _ := perf["eval_data"].(map[string]any)
	if runs, _ := stored["runs"].([]any); len(runs) != 3 || stored["result"] == nil || stored["run_times"] != nil {
		t.Errorf("stored performance eval_data = %v, want Agno's result and 3 runs", stored)
	}
	res := do(t, "PATCH", f.url+"/eval-runs/"+ids["accuracy"], strings.NewReader(`{"name":"renamed"}`), jsonHeader)
	if res.status != 200 || !strings.Contains(res.body, `"name":"renamed"`) {
		t.Errorf("rename = %d %s", res.status, res.body)
	}
	res = do(t, "DELETE", f.url+"/eval-runs", strings.NewReader(`{"eval_run_ids":["`+ids["accuracy"]+`","nope"]}`), jsonHeader)
	if res.status != 204 {
		t.Errorf("delete = %d %s", res.status, res.body)
	}
	if res := get(t, f.url+"/eval-runs/"+ids["accuracy"], nil); res.status != 404 || res.detail(t) != "Eval run with id '"+ids["accuracy"]+"' not found" {
		t.Errorf("after delete = %d %s", res.status, res.body)
	}
	if _, err := f.db.GetEvalRun(context.Background(), ids["reliability"]); err != nil {
		t.Errorf("other eval runs deleted too: %v", err)
	}
}

func TestEvalRuns_RejectsBadRequests(t *testing.T) {
	t.Parallel()
	f := newEvalFixture(t)
	for body, want := range map[string]int{
		`{"agent_id":"echo","eval_type":"vibes","input":"q"}`:                          422,
		`{"agent_id":"echo","eval_type":"reliability","input":""}`:                     422,
		`{"agent_id":"echo","team_id":"t","eval_type":"reliability","input":"q"}`:      400,
		`{"eval_type":"reliability","input":"q"}`:                                      400,
		`{"agent_id":"nope","eval_type":"reliability","input":"q"}`:                    404,
		`{"agent_id":"echo","eval_type":"accuracy","input":"q"}`:                       422,
		`{"agent_id":"echo","eval_type":"reliability","input":"q","num_iterations":0}`: 422,
		// A setting the eval type does not use is refused, not ignored...
		`{"agent_id":"echo","eval_type":"performance","input":"q","expected_output":"a"}`:                         422,
		`{"agent_id":"echo","eval_type":"reliability","input":"q","num_iterations":5}`:                            422,
		`{"agent_id":"echo","eval_type":"accuracy","input":"q","expected_output":"a","warmup_runs":2}`:            422,
		`{"agent_id":"echo","eval_type":"performance","input":"q","criteria":"short"}`:                            422,
		`{"agent_id":"echo","eval_type":"agent_as_judge","input":"q","criteria":"c","expected_tool_calls":["x"]}`: 422,
		// ...but Agno's defaults, which its clients send for every type, are not.
		`{"agent_id":"echo","eval_type":"reliability","input":"q","num_iterations":1,"threshold":7,"scoring_strategy":"binary","warmup_runs":0,"expected_tool_calls":[]}`: 200,
		// As Agno's route, a reliability eval without expected_tool_calls
		// (it would pass whatever the agent called) is refused.
		`{"agent_id":"echo","eval_type":"reliability","input":"q"}`:                            400,
		`{"agent_id":"echo","eval_type":"reliability","input":"q","expected_tool_calls":null}`: 400,
		// echo's model is its own judge and does not answer a verdict.
		`{"agent_id":"echo","eval_type":"accuracy","input":"q","expected_output":"a"}`: 500,
	} {
		if res := do(t, "POST", f.url+"/eval-runs", strings.NewReader(body), jsonHeader); res.status != want {
			t.Errorf("%s = %d %s, want %d", body, res.status, res.body, want)
		}
	}
	for path, want := range map[string]int{"/eval-runs?eval_types=nope": 422, "/eval-runs?type=robot": 422, "/eval-runs?limit=0": 422,
		"/eval-runs?sort_by=name": 422} {
		if res := get(t, f.url+path, nil); res.status != want {
			t.Errorf("GET %s = %d %s, want %d", path, res.status, res.body, want)
		}
	}
	if res := do(t, "PATCH", f.url+"/eval-runs/x", strings.NewReader(`{"name":""}`), jsonHeader); res.status != 422 {
		t.Errorf("empty rename = %d", res.status)
	}
	if res := do(t, "DELETE", f.url+"/eval-runs", strings.NewReader(`{"eval_run_ids":[]}`), jsonHeader); res.status != 422 {
		t.Errorf("empty delete = %d", res.status)
	}
}
