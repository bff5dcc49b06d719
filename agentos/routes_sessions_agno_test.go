package agentos

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/workflow"
)

func TestSessions_ListWithoutTypeListsEveryKind(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t, Config{})
	for path, session := range map[string]string{"/agents/writer/runs": "a1", "/teams/crew/runs": "t1", "/workflows/pipeline/runs": "w1"} {
		if res := postForm(t, f.url+path, map[string]string{"message": "go", "stream": "false", "session_id": session}, nil); res.status != 200 {
			t.Fatalf("POST %s = %d %s", path, res.status, res.body)
		}
	}
	page := decode[paginated[map[string]any]](t, get(t, f.url+"/sessions", nil))
	var kinds []string
	for _, s := range page.Data {
		kinds = append(kinds, s["session_type"].(string))
	}
	slices.Sort(kinds)
	if page.Meta.TotalCount != 3 || !slices.Equal(kinds, []string{"agent", "team", "workflow"}) {
		t.Errorf("GET /sessions = %v sessions of kinds %v, want one of each kind", page.Meta.TotalCount, kinds)
	}
	byComponent := decode[paginated[map[string]any]](t, get(t, f.url+"/sessions?component_id=crew", nil))
	if len(byComponent.Data) != 1 || byComponent.Data[0]["session_id"] != "t1" {
		t.Errorf("GET /sessions?component_id=crew = %v", byComponent.Data)
	}
	agents := decode[paginated[map[string]any]](t, get(t, f.url+"/sessions?type=agent", nil))
	if len(agents.Data) != 1 || agents.Data[0]["session_id"] != "a1" {
		t.Errorf("GET /sessions?type=agent = %v", agents.Data)
	}
}

// TestSessions_UnnamedSessionsShowWhatAgentOSShows: a session without a stored
// session_name is listed (and shown) under the name AgentOS derives from its
// first top-level run, so a web client sees named rows after a reload.
func TestSessions_UnnamedSessionsShowWhatAgentOSShows(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t, Config{})
	runs := []struct{ path, session, message string }{
		{"/agents/writer/runs", "a1", "What tools do you have?"},
		{"/agents/writer/runs", "a1", "And a second question"},
		{"/teams/crew/runs", "t1", "Plan the trip"},
		{"/workflows/pipeline/runs", "w1", "Draft the release notes"},
		{"/agents/reviewer/runs", "renamed", "an unused first message"},
	}
	for _, r := range runs {
		if res := postForm(t, f.url+r.path, map[string]string{"message": r.message, "stream": "false", "session_id": r.session}, nil); res.status != 200 {
			t.Fatalf("POST %s = %d %s", r.path, res.status, res.body)
		}
	}
	if res := do(t, "POST", f.url+"/sessions/renamed/rename", strings.NewReader(`{"session_name":"Chosen name"}`), jsonHeader); res.status != 200 {
		t.Fatalf("rename = %d %s", res.status, res.body)
	}
	if res := do(t, "POST", f.url+"/sessions", strings.NewReader(`{"session_id":"fresh"}`), jsonHeader); res.status != 201 {
		t.Fatalf("create = %d %s", res.status, res.body)
	}
	want := map[string]string{
		"a1":      "What tools do you have?", // the first run's, not the last
		"t1":      "Plan the trip",           // the team's run, not the member's task ("write")
		"w1":      "Draft the release notes",
		"renamed": "Chosen name",
		"fresh":   "", // no run yet
	}
	page := decode[paginated[map[string]any]](t, get(t, f.url+"/sessions", nil))
	got := map[string]string{}
	for _, s := range page.Data {
		got[s["session_id"].(string)] = s["session_name"].(string)
	}
	if !maps.Equal(got, want) {
		t.Errorf("GET /sessions names = %v, want %v", got, want)
	}
	for id, name := range want {
		if d := decode[map[string]any](t, get(t, f.url+"/sessions/"+id, nil)); d["session_name"] != name {
			t.Errorf("GET /sessions/%s session_name = %v, want %q", id, d["session_name"], name)
		}
	}
	if res := do(t, "PATCH", f.url+"/sessions/a1", strings.NewReader(`{"session_state":{"k":1}}`), jsonHeader); !contains(res.body, `"session_name":"What tools do you have?"`) {
		t.Errorf("PATCH answer = %d %s", res.status, res.body)
	}
	// Derived names are shown, not stored: ?session_name= searches stored
	// names only, as in AgentOS.
	if p := decode[paginated[map[string]any]](t, get(t, f.url+"/sessions?session_name=tools", nil)); p.Meta.TotalCount != 0 {
		t.Errorf("?session_name=tools found %d sessions", p.Meta.TotalCount)
	}
}

// TestSessions_NamesOfSessionsWrittenByAgno: rows Agno wrote or a 2.x
// migration copied carry no session_name either; their names follow
// AgentOS's rules for each shape of run.
func TestSessions_NamesOfSessionsWrittenByAgno(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t, Config{})
	ctx := context.Background()
	put := func(s db.Session, runs ...db.Run) {
		t.Helper()
		if _, err := f.db.UpsertSession(ctx, &s); err != nil {
			t.Fatal(err)
		}
		for i := range runs {
			runs[i].SessionID = s.SessionID
			if _, err := f.db.UpsertRun(ctx, &runs[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	agentRun := func(id, data string) db.Run {
		return db.Run{RunID: id, RunType: run.TypeAgent, AgentID: "agno-agent", Status: run.StatusCompleted, RunData: json.RawMessage(data)}
	}
	wfRun := func(id, data string) db.Run {
		return db.Run{RunID: id, RunType: run.TypeWorkflow, WorkflowID: "agno-flow", Status: run.StatusCompleted, RunData: json.RawMessage(data)}
	}
	put(db.Session{SessionID: "agno-agent", SessionType: run.TypeAgent, AgentID: "agno-agent"},
		agentRun("r1", `{"run_id":"r1","input":{"input_content":"ignored when a user message exists"},"messages":[{"role":"system","content":"be kind"},{"role":"user","content":""},{"role":"user","content":"Hello there"}]}`),
		agentRun("r2", `{"run_id":"r2","messages":[{"role":"user","content":"later"}]}`))
	put(db.Session{SessionID: "agno-running", SessionType: run.TypeAgent, AgentID: "agno-agent"},
		agentRun("r3", `{"run_id":"r3","status":"RUNNING","input":{"input_content":"still running"}}`))
	put(db.Session{SessionID: "agno-team", SessionType: run.TypeTeam, TeamID: "agno-team"},
		db.Run{RunID: "m1", RunType: run.TypeAgent, AgentID: "member", ParentRunID: "t1", RunData: json.RawMessage(`{"run_id":"m1","messages":[{"role":"user","content":"member task"}]}`)},
		db.Run{RunID: "t1", RunType: run.TypeTeam, TeamID: "agno-team", RunData: json.RawMessage(`{"run_id":"t1","messages":[{"role":"user","content":"team question"}]}`)})
	put(db.Session{SessionID: "agno-wf-str", SessionType: run.TypeWorkflow, WorkflowID: "agno-flow"},
		wfRun("w1", `{"run_id":"w1","input":"a plain 2.x input"}`))
	put(db.Session{SessionID: "agno-wf-dict", SessionType: run.TypeWorkflow, WorkflowID: "agno-flow"},
		wfRun("w2", `{"run_id":"w2","input":{"topic":"Zürich","n":3,"tags":["a","😀"]}}`))
	put(db.Session{SessionID: "agno-wf-list", SessionType: run.TypeWorkflow, WorkflowID: "agno-flow", WorkflowData: json.RawMessage(`{"name":"Research"}`)},
		wfRun("w3", `{"run_id":"w3","input":["a","b"]}`))
	put(db.Session{SessionID: "agno-empty-name", SessionType: run.TypeAgent, SessionData: json.RawMessage(`{"session_name":""}`)},
		agentRun("r4", `{"run_id":"r4","messages":[{"role":"user","content":"not used"}]}`))
	want := map[string]string{
		"agno-agent":      "Hello there",
		"agno-running":    "still running",
		"agno-team":       "team question",
		"agno-wf-str":     "a plain 2.x input",
		"agno-wf-dict":    `{"topic": "Z\u00fcrich", "n": 3, "tags": ["a", "\ud83d\ude00"]}`,
		"agno-wf-list":    "New Research Session",
		"agno-empty-name": "",
	}
	page := decode[paginated[map[string]any]](t, get(t, f.url+"/sessions?limit=50", nil))
	got := map[string]string{}
	for _, s := range page.Data {
		got[s["session_id"].(string)] = s["session_name"].(string)
	}
	if !maps.Equal(got, want) {
		t.Errorf("names\n got %v\nwant %v", got, want)
	}
}

// FuzzDerivedSessionName: any run_data names a session of any kind without
// panicking, and a name is valid UTF-8 text.
func FuzzDerivedSessionName(f *testing.F) {
	f.Add("workflow", `{"input":{"a":[1,2.5,{"b":null}],"c":"Zürich\n"}}`)
	f.Add("agent", `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"user","content":"hi"}]}`)
	f.Add("team", `{"input":{"input_content":{"x":1}}}`)
	f.Add("workflow", `{"input":[1]}`)
	f.Add("agent", `not json`)
	f.Fuzz(func(t *testing.T, kind, data string) {
		s := &db.Session{SessionID: "s", SessionType: run.Type(kind), WorkflowData: json.RawMessage(`{"name":"W"}`)}
		name := derivedSessionName(s, &db.Run{RunID: "r", RunData: json.RawMessage(data)})
		if !utf8.ValidString(name) && utf8.ValidString(data) {
			t.Fatalf("name %q is not UTF-8", name)
		}
	})
}

// TestSessionRuns_FirstRunStillStreamingIsShownRunning: a web client asks
// for /sessions/{id}/runs as soon as RunStarted names a new session, whose
// row is stored only when the run ends. The answer is the executing run as
// RUNNING (it was 404), only to its owner.
func TestSessionRuns_FirstRunStillStreamingIsShownRunning(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{UserIsolation: true, Auth: Auth{Authenticator: rsaAuthenticator(t)}})
	alice := map[string]string{"Authorization": "Bearer " + rsToken(t, "alice")}
	bob := map[string]string{"Authorization": "Bearer " + rsToken(t, "bob")}
	res, err := sendForm(f.url+"/agents/slow/runs", map[string]string{"message": "take your time"}, alice)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	started := readFirstFrame(t, bufio.NewReader(res.Body))
	sessionID, runID := started.data["session_id"].(string), started.data["run_id"].(string)
	if _, err := f.db.GetSession(context.Background(), sessionID); err == nil {
		t.Fatal("the session is stored already; the test needs one that is not")
	}

	got := get(t, f.url+"/sessions/"+sessionID+"/runs", alice)
	if got.status != 200 {
		t.Fatalf("GET /sessions/%s/runs while the first run streams = %d %s", sessionID, got.status, got.body)
	}
	runs := decode[[]map[string]any](t, got)
	if len(runs) != 1 || runs[0]["run_id"] != runID || runs[0]["status"] != "RUNNING" || runs[0]["run_input"] != "take your time" ||
		runs[0]["agent_id"] != "slow" || runs[0]["session_id"] != sessionID || runs[0]["content"] != nil {
		t.Errorf("runs = %v", runs)
	}
	for name, path := range map[string]string{
		"another user":         "/sessions/" + sessionID + "/runs",
		"another session type": "/sessions/" + sessionID + "/runs?type=team",
	} {
		hdr := alice
		if name == "another user" {
			hdr = bob
		}
		if res := get(t, f.url+path, hdr); res.status != 404 {
			t.Errorf("%s: GET %s = %d %s, want 404", name, path, res.status, res.body)
		}
	}
	if res := get(t, f.url+"/sessions/no-such-session/runs", alice); res.status != 404 {
		t.Errorf("unknown session = %d", res.status)
	}

	// Once the run ends its stored row answers.
	if res := postForm(t, f.url+"/agents/slow/runs/"+runID+"/cancel", nil, alice); res.status != 200 {
		t.Fatalf("cancel = %d %s", res.status, res.body)
	}
	runs = decode[[]map[string]any](t, get(t, f.url+"/sessions/"+sessionID+"/runs", alice))
	if len(runs) != 1 || runs[0]["status"] != "CANCELLED" {
		t.Errorf("runs after the end = %v", runs)
	}
}

// A session's detail shows the tokens its runs spent (metrics and
// total_tokens, from session_data.session_metrics), as AgentOS does for a
// session Agno wrote: a team's session counts its member runs too, a
// workflow's its step runs. They were null for every session Agentry wrote.
func TestSessionDetail_MetricsAddUpTheSessionsRuns(t *testing.T) {
	t.Parallel()
	f := newTeamFixture(t, Config{})
	for path, session := range map[string]string{"/agents/writer/runs": "a1", "/teams/crew/runs": "t1", "/workflows/pipeline/runs": "w1"} {
		for range 2 {
			if res := postForm(t, f.url+path, map[string]string{"message": "go", "stream": "false", "session_id": session}, nil); res.status != 200 {
				t.Fatalf("POST %s = %d %s", path, res.status, res.body)
			}
		}
		runs := decode[[]map[string]any](t, get(t, f.url+"/sessions/"+session+"/runs", nil))
		var want float64
		for _, r := range runs {
			m, _ := r["metrics"].(map[string]any)
			n, _ := m["total_tokens"].(float64)
			want += n
		}
		if path != "/agents/writer/runs" && len(runs) <= 2 {
			t.Fatalf("session %s lists %d runs, want the member runs too", session, len(runs))
		}
		detail := decode[map[string]any](t, get(t, f.url+"/sessions/"+session, nil))
		metrics, _ := detail["metrics"].(map[string]any)
		if want == 0 || detail["total_tokens"] != want || metrics["total_tokens"] != want {
			t.Errorf("GET /sessions/%s: total_tokens %v, metrics %v; the runs spent %v", session, detail["total_tokens"], detail["metrics"], want)
		}
	}
}

// A continue of a run paused in another version of a stored workflow's
// steps (workflow.ErrStepsChanged) is a conflict, not a server error.
func TestWorkflowContinueErr_StepsChangedIsAConflict(t *testing.T) {
	err := workflowContinueErr(fmt.Errorf("%w: run r1 cannot be continued by this version of workflow w", workflow.ErrStepsChanged))
	var he *httpError
	if !errors.As(err, &he) || he.Status != http.StatusConflict {
		t.Fatalf("error = %v, want a 409", err)
	}
}
