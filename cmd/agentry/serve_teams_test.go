package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

func postTo(t *testing.T, u string, fields url.Values) (int, map[string]any) {
	t.Helper()
	res, err := http.PostForm(u, fields)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatalf("decode %s: %v", u, err)
	}
	return res.StatusCode, body
}

func getJSON[T any](t *testing.T, u string) T {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var v T
	if res.StatusCode != 200 || json.Unmarshal(b, &v) != nil {
		t.Fatalf("GET %s = %d %s", u, res.StatusCode, b)
	}
	return v
}

func TestServe_ServesTeamsAndWorkflowsFromTheConfigFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writer := writeFile(t, "writer.yaml", "turns:\n  - content: a draft\n")
	leader := writeFile(t, "leader.yaml", `turns:
  - tool_calls:
      - name: delegate_task_to_member
        args: {member_id: writer, task: write it}
  - content: the team answer
`)
	cfg := writeFile(t, "agentos.yaml", `agents:
  - id: writer
    model: scripted:`+writer+`
teams:
  - id: crew
    name: Crew
    model: scripted:`+leader+`
    members: [writer]
workflows:
  - id: pipeline
    steps:
      - name: draft
        agent: writer
      - name: polish
        team: crew
`)
	base, stop := startServe(t, "--config", cfg, "--port", "0", "--db", filepath.Join(dir, "a.db"), "--data-dir", filepath.Join(dir, "d"))

	teams := getJSON[[]map[string]any](t, base+"/teams")
	if len(teams) != 1 || teams[0]["id"] != "crew" || teams[0]["db_id"] == "" || len(teams[0]["members"].([]any)) != 1 {
		t.Errorf("/teams = %v", teams)
	}
	wfs := getJSON[[]map[string]any](t, base+"/workflows")
	if len(wfs) != 1 || wfs[0]["id"] != "pipeline" || len(wfs[0]["steps"].([]any)) != 2 {
		t.Errorf("/workflows = %v", wfs)
	}
	info := getJSON[map[string]any](t, base+"/info")
	if ts, _ := info["teams"].([]any); len(ts) != 1 || ts[0] != "crew" {
		t.Errorf("/info = %v", info)
	}

	status, out := postTo(t, base+"/teams/crew/runs", url.Values{"message": {"go"}, "stream": {"false"}})
	if status != 200 || out["status"] != "COMPLETED" || out["content"] != "the team answer" || out["team_id"] != "crew" {
		t.Fatalf("team run = %d %v", status, out)
	}
	status, out = postTo(t, base+"/workflows/pipeline/runs", url.Values{"message": {"go"}, "stream": {"false"}})
	if status != 200 || out["status"] != "COMPLETED" || out["content"] != "the team answer" || out["workflow_id"] != "pipeline" {
		t.Fatalf("workflow run = %d %v", status, out)
	}
	runs := getJSON[[]map[string]any](t, base+"/workflows/pipeline/runs")
	if len(runs) != 1 || runs[0]["run_id"] != out["run_id"] {
		t.Errorf("workflow runs = %v", runs)
	}
	if code, logs := stop(); code != 0 || !strings.Contains(logs, "teams=1 workflows=1") {
		t.Errorf("exit %d, logs:\n%s", code, logs)
	}
}
