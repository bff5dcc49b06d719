package agentos

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/tool"
)

func openTeamDB(t *testing.T, path string) *db.DB {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, ID: "team-db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func turn(name string, args map[string]any) scripted.Turn {
	return scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: name, Args: args}}}
}

// modeTeams is one team per mode over members "a" and "b", on d.
func modeTeams(t *testing.T, d *db.DB) Config {
	t.Helper()
	a, _ := agent.New(agent.Config{ID: "a", Name: "A", Model: scripted.Reply("answer a"), DB: d})
	b, _ := agent.New(agent.Config{ID: "b", Name: "B", Model: scripted.Reply("answer b"), DB: d})
	mk := func(id string, mode team.Mode, turns ...scripted.Turn) *team.Team {
		tm, err := team.New(team.Config{ID: id, Mode: mode, Model: scripted.MustNew(scripted.Config{Turns: turns}), Members: []*agent.Agent{a, b}, DB: d})
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	teams := []*team.Team{
		mk("coord", team.ModeCoordinate, turn(team.ToolDelegate, map[string]any{"member_id": "a", "task": "t"}), scripted.Turn{Content: "coordinated"}),
		mk("router", team.ModeRoute, turn(team.ToolDelegate, map[string]any{"member_id": "b", "task": "t"})),
		mk("all", team.ModeBroadcast, turn(team.ToolDelegateAll, map[string]any{"task": "t"}), scripted.Turn{Content: "broadcast done"}),
		mk("planner", team.ModeTasks, turn("create_task", map[string]any{"title": "one", "assignee": "a"}),
			turn("execute_task", map[string]any{"task_id": "t1", "member_id": "a"}), scripted.Turn{Content: "planned"}),
	}
	org, err := team.New(team.Config{ID: "org", Model: scripted.Reply("x"), Teams: []*team.Team{teams[0]}, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	return Config{Agents: []*agent.Agent{a, b}, Teams: append(teams, org)}
}

func TestTeamModes_OverHTTPStreamedAndNot(t *testing.T) {
	t.Parallel()
	d := openTeamDB(t, filepath.Join(t.TempDir(), "agentry.db"))
	ts, _ := testServer(t, modeTeams(t, d), nil)
	org := decode[map[string]any](t, get(t, ts.URL+"/teams/org", nil))
	if ms, _ := org["members"].([]any); len(ms) != 1 || ms[0].(map[string]any)["id"] != "coord" || ms[0].(map[string]any)["mode"] != "coordinate" {
		t.Errorf("/teams/org members = %v", org["members"])
	}
	cases := []struct {
		id, content string
		members     []string
		teamEvents  []string // in order, among the team's own frames
	}{
		{"coord", "coordinated", []string{"a"}, []string{"TeamRunStarted", "TeamToolCallStarted", "TeamToolCallCompleted", "TeamRunCompleted"}},
		{"router", "answer b", []string{"b"}, []string{"TeamRunStarted", "TeamToolCallStarted", "TeamToolCallCompleted", "TeamRunCompleted"}},
		{"all", "broadcast done", []string{"a", "b"}, []string{"TeamRunStarted", "TeamToolCallStarted", "TeamToolCallCompleted", "TeamRunCompleted"}},
		{"planner", "planned", []string{"a"}, []string{"TeamRunStarted", "TeamTaskIterationStarted",
			"TeamToolCallStarted", "TeamTaskCreated", "TeamToolCallCompleted",
			"TeamToolCallStarted", "TeamTaskUpdated", "TeamTaskUpdated", "TeamToolCallCompleted",
			"TeamTaskStateUpdated", "TeamTaskIterationCompleted", "TeamRunCompleted"}},
	}
	for _, tc := range cases {
		if got := decode[map[string]any](t, get(t, ts.URL+"/teams/"+tc.id, nil)); got["mode"] != map[string]string{"coord": "coordinate", "router": "route", "all": "broadcast", "planner": "tasks"}[tc.id] {
			t.Errorf("%s: /teams mode = %v", tc.id, got["mode"])
		}
		// Not streamed: the run with its member_responses, rows with parentage.
		res := postForm(t, ts.URL+"/teams/"+tc.id+"/runs", map[string]string{"message": "go", "stream": "false", "session_id": "s-" + tc.id}, nil)
		out := decode[map[string]any](t, res)
		if res.status != 200 || out["status"] != "COMPLETED" || out["content"] != tc.content {
			t.Fatalf("%s: %d %v", tc.id, res.status, out)
		}
		teamRunID := out["run_id"].(string)
		mr, _ := out["member_responses"].([]any)
		if len(mr) != len(tc.members) {
			t.Errorf("%s: member_responses %d", tc.id, len(mr))
		}
		for _, m := range tc.members {
			if n := countRuns(t, d, db.RunFilter{SessionID: "s-" + tc.id, ParentRunID: teamRunID, AgentID: m}); n != 1 {
				t.Errorf("%s: %d rows of member %s with parent_run_id", tc.id, n, m)
			}
		}
		// Streamed: the team's frames in order, the members' forwarded.
		res = postForm(t, ts.URL+"/teams/"+tc.id+"/runs", map[string]string{"message": "go", "session_id": "s2-" + tc.id}, nil)
		frames := parseSSE(t, res.body)
		var own []string
		started := map[string]bool{}
		runID := frames[0].data["run_id"]
		for _, fr := range frames {
			switch {
			case fr.data["run_id"] == runID && fr.name != "TeamRunContent" && fr.name != "TeamModelRequestStarted" && fr.name != "TeamModelRequestCompleted" && fr.name != "TeamRunContentCompleted":
				own = append(own, fr.name)
			case fr.name == "RunStarted" && fr.data["parent_run_id"] == runID:
				started[fr.data["agent_id"].(string)] = true
			}
		}
		if !slices.Equal(own, tc.teamEvents) {
			t.Errorf("%s: team frames %v, want %v", tc.id, own, tc.teamEvents)
		}
		if len(started) != len(tc.members) {
			t.Errorf("%s: forwarded member starts %v", tc.id, started)
		}
		if last := frames[len(frames)-1]; last.name != "TeamRunCompleted" || last.data["content"] != tc.content {
			t.Errorf("%s: last frame %s %v", tc.id, last.name, last.data)
		}
	}
}

// opsServer serves team "crew" whose member "ops" deploys after a
// confirmation, on the SQLite file at path: a new call is a restarted server.
func opsServer(t *testing.T, path string, ran *int) string {
	t.Helper()
	d := openTeamDB(t, path)
	deploy := tool.MustFunc(tool.FuncConfig{Name: "deploy", Description: "Deploys.", RequiresConfirmation: true},
		func(context.Context, struct{}) (string, error) { *ran++; return "deployed", nil })
	ops, _ := agent.New(agent.Config{ID: "ops", Name: "Ops", DB: d, Tools: []tool.Tool{deploy},
		Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{turn("deploy", map[string]any{}), {Content: "ops deployed"}}})})
	crew, err := team.New(team.Config{ID: "crew", DB: d, Members: []*agent.Agent{ops},
		Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{turn(team.ToolDelegate, map[string]any{"member_id": "ops", "task": "deploy"}), {Content: "the crew deployed"}}})})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{ops}, Teams: []*team.Team{crew}}, nil)
	return ts.URL
}

func TestTeamContinue_PausedByMemberContinuedAfterRestart(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "agentry.db")
		var ran int
		url := opsServer(t, path, &ran)
		res := postForm(t, url+"/teams/crew/runs", map[string]string{"message": "ship", "stream": "false", "session_id": "s", "user_id": "alice"}, nil)
		out := decode[map[string]any](t, res)
		if out["status"] != "PAUSED" {
			t.Fatalf("first leg = %d %v", res.status, out)
		}
		runID := out["run_id"].(string)
		reqs, _ := out["requirements"].([]any)
		if len(reqs) != 1 {
			t.Fatalf("requirements = %v", out["requirements"])
		}
		req := reqs[0].(map[string]any)
		if req["member_agent_id"] != "ops" || req["member_run_id"] == nil || req["tool_execution"].(map[string]any)["tool_name"] != "deploy" {
			t.Fatalf("requirement = %v", req)
		}
		// A new server on the same file.
		url = opsServer(t, path, &ran)
		req["tool_execution"].(map[string]any)["confirmed"] = true
		body, _ := json.Marshal([]any{req})
		fields := map[string]string{"requirements": string(body), "stream": "false", "user_id": "bob"}
		if res := postForm(t, url+"/teams/crew/runs/"+runID+"/continue", fields, nil); res.status != 404 {
			t.Fatalf("bob continuing alice's run = %d %s", res.status, res.body)
		}
		if ran != 0 {
			t.Fatal("the tool ran for bob")
		}
		fields["user_id"] = "alice"
		fields["stream"] = map[bool]string{false: "false", true: "true"}[stream]
		res = postForm(t, url+"/teams/crew/runs/"+runID+"/continue", fields, nil)
		if stream {
			frames := parseSSE(t, res.body)
			if frames[0].name != "TeamRunContinued" || frames[len(frames)-1].name != "TeamRunCompleted" || frames[len(frames)-1].data["content"] != "the crew deployed" {
				t.Fatalf("continued stream = %.600s", res.body)
			}
		} else if out := decode[map[string]any](t, res); res.status != 200 || out["status"] != "COMPLETED" || out["content"] != "the crew deployed" {
			t.Fatalf("continued = %d %v", res.status, out)
		}
		if ran != 1 {
			t.Errorf("deploy ran %d times", ran)
		}
		d := openTeamDB(t, path)
		for _, f := range []db.RunFilter{{SessionID: "s", RunType: run.TypeTeam}, {SessionID: "s", ParentRunID: runID, AgentID: "ops"}} {
			f.Statuses = []run.Status{run.StatusCompleted}
			if n := countRuns(t, d, f); n != 1 {
				t.Errorf("stream=%v: %d COMPLETED rows for %+v", stream, n, f)
			}
		}
		if res := postForm(t, url+"/teams/crew/runs/"+runID+"/continue", map[string]string{"stream": "false", "user_id": "alice"}, nil); res.status != 409 {
			t.Errorf("continuing the completed run = %d", res.status)
		}
	}
}
