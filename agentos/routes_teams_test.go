package agentos

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// teamFixture serves a team "crew" (leader delegates to "writer", then
// answers) and a workflow "pipeline" (writer, then reviewer) on a SQLite file.
type teamFixture struct {
	url string
	db  *db.DB
}

func newTeamFixture(t *testing.T, cfg Config) teamFixture {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db"), ID: "team-db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	writer, err := agent.New(agent.Config{ID: "writer", Name: "Writer", Model: scripted.Reply("a draft"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	reviewer, err := agent.New(agent.Config{ID: "reviewer", Model: scripted.Reply("reviewed"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	leader := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: team.ToolDelegate, Args: map[string]any{"member_id": "writer", "task": "write"}}}},
		{Content: "the team answer"},
	}})
	crew, err := team.New(team.Config{ID: "crew", Name: "Crew", Model: leader, Members: []*agent.Agent{writer}, DB: d, AddHistoryToContext: true})
	if err != nil {
		t.Fatal(err)
	}
	wf, err := workflow.New(workflow.Config{ID: "pipeline", Name: "Pipeline", DB: d,
		Steps: []workflow.Step{{Name: "draft", Runner: writer}, {Name: "review", Runner: reviewer}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Agents = []*agent.Agent{writer, reviewer}
	cfg.Teams = []*team.Team{crew}
	cfg.Workflows = []*workflow.Workflow{wf}
	ts, _ := testServer(t, cfg, nil)
	return teamFixture{url: ts.URL, db: d}
}

func TestTeams_ListAndDetail(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t, Config{})
	teams := decode[[]map[string]any](t, get(t, f.url+"/teams", nil))
	if len(teams) != 1 || teams[0]["id"] != "crew" || teams[0]["db_id"] != "team-db" || teams[0]["name"] != "Crew" {
		t.Fatalf("/teams = %v", teams)
	}
	members, _ := teams[0]["members"].([]any)
	if len(members) != 1 || members[0].(map[string]any)["id"] != "writer" {
		t.Errorf("members = %v", teams[0]["members"])
	}
	if m, _ := teams[0]["model"].(map[string]any); m["model"] != "scripted" {
		t.Errorf("model = %v", teams[0]["model"])
	}
	if res := get(t, f.url+"/teams/crew", nil); res.status != 200 || !contains(res.body, `"id":"crew"`) {
		t.Errorf("/teams/crew = %d %s", res.status, res.body)
	}
	if res := get(t, f.url+"/teams/nope", nil); res.status != 404 || res.detail(t) != "Team not found" {
		t.Errorf("/teams/nope = %d %s", res.status, res.body)
	}
	if res := postForm(t, f.url+"/teams/nope/runs", map[string]string{"message": "x"}, nil); res.status != 404 {
		t.Errorf("run of unknown team = %d", res.status)
	}
	cfg := decode[map[string]any](t, get(t, f.url+"/config", nil))
	if ts, _ := cfg["teams"].([]any); len(ts) != 1 || ts[0].(map[string]any)["db_id"] != "team-db" {
		t.Errorf("/config teams = %v", cfg["teams"])
	}
	if ws, _ := cfg["workflows"].([]any); len(ws) != 1 || ws[0].(map[string]any)["id"] != "pipeline" {
		t.Errorf("/config workflows = %v", cfg["workflows"])
	}
	info := decode[map[string]any](t, get(t, f.url+"/info", nil))
	if ts, _ := info["teams"].([]any); len(ts) != 1 || ts[0] != "crew" {
		t.Errorf("/info = %v", info)
	}
}

func TestTeamRuns_StoreOneTeamRowPlusMemberRowsAndStreamTeamEvents(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t, Config{})
	res := postForm(t, f.url+"/teams/crew/runs", map[string]string{"message": "go", "stream": "false", "session_id": "s1"}, nil)
	if res.status != 200 {
		t.Fatalf("team run = %d %s", res.status, res.body)
	}
	out := decode[map[string]any](t, res)
	if out["status"] != "COMPLETED" || out["content"] != "the team answer" || out["team_id"] != "crew" || out["agent_id"] != nil {
		t.Fatalf("team run = %v", out)
	}
	if mr, _ := out["member_responses"].([]any); len(mr) != 1 {
		t.Errorf("member_responses = %v", out["member_responses"])
	}
	teamRunID := out["run_id"].(string)
	if n := countRuns(t, f.db, db.RunFilter{SessionID: "s1", RunType: run.TypeTeam}); n != 1 {
		t.Errorf("%d team rows, want 1", n)
	}
	if n := countRuns(t, f.db, db.RunFilter{SessionID: "s1", ParentRunID: teamRunID, AgentID: "writer"}); n != 1 {
		t.Errorf("%d member rows with parent_run_id, want 1", n)
	}

	res = postForm(t, f.url+"/teams/crew/runs", map[string]string{"message": "again", "session_id": "s1"}, nil)
	frames := parseSSE(t, res.body)
	if len(frames) == 0 || frames[0].name != "TeamRunStarted" || frames[len(frames)-1].name != "TeamRunCompleted" {
		t.Fatalf("stream = %.400s", res.body)
	}
	for _, fr := range frames {
		if fr.data["parent_run_id"] != nil {
			// A forwarded member event.
			if fr.data["agent_id"] != "writer" || strings.HasPrefix(fr.name, "Team") {
				t.Errorf("member frame %s %v", fr.name, fr.data)
			}
			continue
		}
		if !strings.HasPrefix(fr.name, "Team") || fr.data["event"] != fr.name || fr.data["team_id"] != "crew" || fr.data["session_id"] != "s1" {
			t.Errorf("frame %s %v", fr.name, fr.data)
		}
	}

	// Listing shows the team's runs only, never the member runs.
	runs := decode[[]map[string]any](t, get(t, f.url+"/teams/crew/runs?session_id=s1", nil))
	if len(runs) != 2 || runs[0]["run_id"] != teamRunID {
		t.Errorf("team runs = %v", runs)
	}
	if res := get(t, f.url+"/teams/crew/runs/"+teamRunID, nil); res.status != 200 || !contains(res.body, `"run_id":"`+teamRunID+`"`) {
		t.Errorf("get team run = %d %s", res.status, res.body)
	}
	memberRuns := decode[[]map[string]any](t, get(t, f.url+"/agents/writer/runs?session_id=s1", nil))
	if len(memberRuns) != 2 {
		t.Fatalf("writer runs = %v", memberRuns)
	}
	if res := get(t, f.url+"/teams/crew/runs/"+memberRuns[0]["run_id"].(string), nil); res.status != 404 {
		t.Errorf("a member run read as a team run = %d", res.status)
	}
	if res := postForm(t, f.url+"/teams/crew/runs/"+teamRunID+"/cancel", nil, nil); res.status != 409 {
		t.Errorf("cancel of a finished team run = %d %s", res.status, res.body)
	}
	if res := postForm(t, f.url+"/teams/crew/runs/"+teamRunID+"/continue", nil, nil); res.status != 409 {
		t.Errorf("continue of a finished team run = %d %s", res.status, res.body)
	}
	sessions := decode[map[string]any](t, get(t, f.url+"/sessions?type=team", nil))
	if data, _ := sessions["data"].([]any); len(data) != 1 || data[0].(map[string]any)["team_id"] != "crew" {
		t.Errorf("team sessions = %v", sessions)
	}
}

func TestWorkflowRuns_PassContentAlongAndStoreRows(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t, Config{})
	wfs := decode[[]map[string]any](t, get(t, f.url+"/workflows", nil))
	if len(wfs) != 1 || wfs[0]["id"] != "pipeline" || wfs[0]["db_id"] != "team-db" || len(wfs[0]["steps"].([]any)) != 2 {
		t.Fatalf("/workflows = %v", wfs)
	}
	res := postForm(t, f.url+"/workflows/pipeline/runs", map[string]string{"message": "go", "stream": "false", "session_id": "w1"}, nil)
	out := decode[map[string]any](t, res)
	if res.status != 200 || out["status"] != "COMPLETED" || out["content"] != "reviewed" || out["workflow_id"] != "pipeline" {
		t.Fatalf("workflow run = %d %v", res.status, out)
	}
	runID := out["run_id"].(string)
	if n := countRuns(t, f.db, db.RunFilter{SessionID: "w1", ParentRunID: runID}); n != 2 {
		t.Errorf("%d step rows, want 2", n)
	}
	// The reviewer's input was the writer's output.
	rows, _, err := f.db.GetRuns(context.Background(), db.RunFilter{SessionID: "w1", AgentID: "reviewer", Limit: 10, Page: 1})
	if err != nil || len(rows) != 1 {
		t.Fatalf("reviewer rows = %v, %v", rows, err)
	}
	if rev, _ := rows[0].Output(); rev == nil || rev.Input.Text() != "a draft" {
		t.Errorf("reviewer input = %+v", rev)
	}

	res = postForm(t, f.url+"/workflows/pipeline/runs", map[string]string{"message": "go"}, nil)
	var names []string
	for _, fr := range parseSSE(t, res.body) {
		if strings.HasPrefix(fr.name, "Workflow") || strings.HasPrefix(fr.name, "Step") || fr.name == "RunCompleted" {
			names = append(names, fr.name)
		}
	}
	want := "WorkflowStarted StepStarted RunCompleted StepCompleted StepStarted RunCompleted StepCompleted WorkflowCompleted"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("stream\n got %s\nwant %s", got, want)
	}
	if runs := decode[[]map[string]any](t, get(t, f.url+"/workflows/pipeline/runs", nil)); len(runs) != 2 {
		t.Errorf("workflow runs = %d", len(runs))
	}
	if res := get(t, f.url+"/workflows/nope", nil); res.status != 404 || res.detail(t) != "Workflow not found" {
		t.Errorf("/workflows/nope = %d", res.status)
	}
}

func TestTeamAndWorkflowRuns_AreIsolatedPerUser(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t, Config{Auth: Auth{Authenticator: jwtAuthenticator(t, "")}, UserIsolation: true})
	alice := bearer(hsToken(t, jwt.MapClaims{"sub": "alice"}))
	bob := bearer(hsToken(t, jwt.MapClaims{"sub": "bob"}))
	for _, base := range []string{"/teams/crew", "/workflows/pipeline"} {
		res := postForm(t, f.url+base+"/runs", map[string]string{"message": "go", "stream": "false", "user_id": "mallory"}, alice)
		out := decode[map[string]any](t, res)
		if res.status != 200 || out["user_id"] != "alice" {
			t.Fatalf("%s run = %d %v", base, res.status, out)
		}
		runID, sessionID := out["run_id"].(string), out["session_id"].(string)
		if res := get(t, f.url+base+"/runs/"+runID, alice); res.status != 200 {
			t.Errorf("%s owner read = %d", base, res.status)
		}
		if res := get(t, f.url+base+"/runs/"+runID, bob); res.status != 404 {
			t.Errorf("%s other user's read = %d, want 404", base, res.status)
		}
		if res := postForm(t, f.url+base+"/runs/"+runID+"/cancel", nil, bob); res.status != 404 {
			t.Errorf("%s other user's cancel = %d, want 404", base, res.status)
		}
		if res := postForm(t, f.url+base+"/runs/"+runID+"/continue", nil, bob); res.status != 404 {
			t.Errorf("%s other user's continue = %d, want 404", base, res.status)
		}
		if runs := decode[[]map[string]any](t, get(t, f.url+base+"/runs?user_id=alice", bob)); len(runs) != 0 {
			t.Errorf("%s other user's list = %v", base, runs)
		}
		if res := postForm(t, f.url+base+"/runs", map[string]string{"message": "x", "stream": "false", "session_id": sessionID}, bob); res.status != 404 {
			t.Errorf("%s run in another user's session = %d, want 404", base, res.status)
		}
		if storedStatus(f.db, runID) != run.StatusCompleted {
			t.Errorf("%s run touched: %s", base, storedStatus(f.db, runID))
		}
	}
}

func TestTeamAndWorkflowRuns_RunInTheBackground(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t, Config{})
	for _, base := range []string{"/teams/crew", "/workflows/pipeline"} {
		res := postForm(t, f.url+base+"/runs", map[string]string{"message": "go", "background": "true"}, nil)
		acc := decode[map[string]any](t, res)
		if res.status != 202 || acc["status"] != "PENDING" {
			t.Fatalf("%s background = %d %v", base, res.status, acc)
		}
		runID := acc["run_id"].(string)
		eventually(t, base+" background run to complete", func() bool { return storedStatus(f.db, runID) == run.StatusCompleted })
		if res := get(t, f.url+base+"/runs/"+runID, nil); res.status != 200 {
			t.Errorf("%s get = %d %s", base, res.status, res.body)
		}
		s, err := f.db.GetSession(context.Background(), acc["session_id"].(string))
		if want := run.Type(strings.TrimSuffix(strings.Split(base, "/")[1], "s")); err != nil || s.SessionType != want {
			t.Errorf("%s session = %+v, %v (want %s)", base, s, err, want)
		}
	}
}
