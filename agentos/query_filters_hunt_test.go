package agentos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// seedTimedRuns stores session s1 (alice's) on d with three agent runs
// created at epoch seconds 100, 200 and 300.
func seedTimedRuns(t *testing.T, d *db.DB) {
	t.Helper()
	ctx := context.Background()
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeAgent, AgentID: "echo", UserID: "alice"}); err != nil {
		t.Fatal(err)
	}
	for i, at := range []int64{100, 200, 300} {
		row, err := db.RunFromOutput(&run.Output{RunID: fmt.Sprintf("r%d", at), SessionID: "s1", AgentID: "echo", UserID: "alice",
			Status: run.StatusCompleted, Content: fmt.Sprint("answer ", i), CreatedAt: at, UpdatedAt: at})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.UpsertRun(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
}

// TestSessionRuns_CreatedAfterAndBeforeFilter: GET /sessions/{id}/runs takes
// Agno's created_after and created_before (epoch seconds, both inclusive);
// they were accepted and ignored, so every run came back. A value that is not
// an integer is a 422, as FastAPI answers.
func TestSessionRuns_CreatedAfterAndBeforeFilter(t *testing.T) {
	t.Parallel()
	d := openSQLite(t, "runs-db")
	seedTimedRuns(t, d)
	ts, _ := testServer(t, Config{DBs: []*db.DB{d}}, nil)
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"", []string{"r100", "r200", "r300"}},
		{"created_after=200", []string{"r200", "r300"}},
		{"created_before=200", []string{"r100", "r200"}},
		{"created_after=150&created_before=250", []string{"r200"}},
		{"created_after=301", nil},
		{"created_after=0", []string{"r100", "r200", "r300"}},
	} {
		res := get(t, ts.URL+"/sessions/s1/runs?"+c.query, nil)
		if res.status != 200 {
			t.Fatalf("?%s = %d %s", c.query, res.status, res.body)
		}
		var got []string
		for _, v := range decode[[]map[string]any](t, res) {
			got = append(got, v["run_id"].(string))
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("GET /sessions/s1/runs?%s = %v, want %v", c.query, got, c.want)
		}
	}
	for _, q := range []string{"created_after=yesterday", "created_before=1.5"} {
		if res := get(t, ts.URL+"/sessions/s1/runs?"+q, nil); res.status != 422 {
			t.Errorf("?%s = %d %s, want 422", q, res.status, res.body)
		}
	}
}

// TestUserMemoryStats_UserIDFilters: GET /user_memory_stats?user_id= lists
// that user's statistics only, as Agno's route does; the parameter was
// ignored for an unscoped caller, who got every user's.
func TestUserMemoryStats_UserIDFilters(t *testing.T) {
	t.Parallel()
	d := openSQLite(t, "mem-db")
	seedMemories(t, d)
	ts, _ := testServer(t, Config{DBs: []*db.DB{d}}, nil)
	all := decode[paginated[map[string]any]](t, get(t, ts.URL+"/user_memory_stats", nil))
	if all.Meta.TotalCount != 2 {
		t.Fatalf("GET /user_memory_stats = %+v, want alice and bob", all)
	}
	one := decode[paginated[map[string]any]](t, get(t, ts.URL+"/user_memory_stats?user_id=alice", nil))
	if one.Meta.TotalCount != 1 || len(one.Data) != 1 || one.Data[0]["user_id"] != "alice" || one.Data[0]["total_memories"] != float64(1) {
		t.Errorf("GET /user_memory_stats?user_id=alice = %+v, want alice's only", one)
	}
	none := decode[paginated[map[string]any]](t, get(t, ts.URL+"/user_memory_stats?user_id=carol", nil))
	if none.Meta.TotalCount != 0 || len(none.Data) != 0 {
		t.Errorf("GET /user_memory_stats?user_id=carol = %+v, want nothing", none)
	}
}

// TestMetrics_BackgroundRefreshAndStatus: POST /metrics/refresh?background=true
// answers 202 {"status":"started"} and refreshes after, and GET
// /metrics/refresh/status follows it (idle, then completed), as Agno's
// routes and AgentOSClient do: background was ignored (a synchronous
// refresh answered 200 with the rows) and the status route was a 404.
func TestMetrics_BackgroundRefreshAndStatus(t *testing.T) {
	t.Parallel()
	d := openSQLite(t, "metrics-db")
	a, err := agent.New(agent.Config{ID: "echo", Model: scripted.Reply("hi"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), run.TextInput("hello"), agent.WithSessionID("s1"), agent.WithUserID("alice")); err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}}, nil)
	st := decode[map[string]any](t, get(t, ts.URL+"/metrics/refresh/status", nil))
	if st["status"] != "idle" {
		t.Fatalf("status before any refresh = %v, want idle", st)
	}
	res := do(t, "POST", ts.URL+"/metrics/refresh?background=true", nil, nil)
	if res.status != 202 || decode[map[string]any](t, res)["status"] != "started" {
		t.Fatalf("background refresh = %d %s, want 202 started", res.status, res.body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st = decode[map[string]any](t, get(t, ts.URL+"/metrics/refresh/status", nil))
		if st["status"] != "running" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st["status"] != "completed" || st["started_at"] == nil || st["finished_at"] == nil || st["error"] != nil {
		t.Fatalf("status after the background refresh = %v, want completed", st)
	}
	all := decode[struct{ Metrics []map[string]any }](t, get(t, ts.URL+"/metrics", nil))
	if len(all.Metrics) != 1 || all.Metrics[0]["agent_runs_count"] != 1.0 {
		t.Errorf("metrics after the background refresh = %+v", all.Metrics)
	}
	if res := do(t, "POST", ts.URL+"/metrics/refresh?background=maybe", nil, nil); res.status != 422 {
		t.Errorf("background=maybe = %d %s, want 422", res.status, res.body)
	}
}

// TestConfig_DomainsListEveryDatabaseByID: GET /config names, for each
// domain whose routes Agentry serves (sessions, memory, learnings, evals,
// metrics, traces), the databases a client can pick, each shown under its
// id as in Agno. The evals, learning and traces domains were missing, so a
// client found no database for those pages, and every database of a domain
// was shown under the domain's name, so two could not be told apart.
func TestConfig_DomainsListEveryDatabaseByID(t *testing.T) {
	t.Parallel()
	one, two := openSQLite(t, "db-one"), openSQLite(t, "db-two")
	ts, _ := testServer(t, Config{DBs: []*db.DB{one, two}}, nil)
	cfg := decode[map[string]any](t, get(t, ts.URL+"/config", nil))
	for _, domain := range []string{"session", "memory", "learning", "evals", "metrics", "traces"} {
		dc, ok := cfg[domain].(map[string]any)
		if !ok {
			t.Errorf("config has no %s domain: %v", domain, cfg[domain])
			continue
		}
		var got []string
		for _, e := range dc["dbs"].([]any) {
			e := e.(map[string]any)
			got = append(got, fmt.Sprint(e["db_id"], "=", e["domain_config"].(map[string]any)["display_name"]))
		}
		if fmt.Sprint(got) != "[db-one=db-one db-two=db-two]" {
			t.Errorf("%s dbs = %v, want db-one and db-two, each shown under its id", domain, got)
		}
	}
}

// TestSessions_MetadataAndSummaryMustBeObjects: a session's metadata (POST
// and PATCH /sessions) and summary (PATCH) are JSON objects in Agno's
// request models (422 otherwise); a number, string or list was stored and
// shown back, which Agno's clients cannot read.
func TestSessions_MetadataAndSummaryMustBeObjects(t *testing.T) {
	t.Parallel()
	d := openSQLite(t, "sessions-db")
	seedTimedRuns(t, d)
	ts, _ := testServer(t, Config{DBs: []*db.DB{d}}, nil)
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", "/sessions/s1", `{"metadata": 5}`},
		{"PATCH", "/sessions/s1", `{"metadata": [1]}`},
		{"PATCH", "/sessions/s1", `{"summary": "x"}`},
		{"POST", "/sessions", `{"metadata": "str"}`},
	} {
		if res := do(t, c.method, ts.URL+c.path, strings.NewReader(c.body), jsonHeader); res.status != 422 {
			t.Errorf("%s %s %s = %d %s, want 422", c.method, c.path, c.body, res.status, res.body)
		}
	}
	sess, err := d.GetSession(context.Background(), "s1")
	if err != nil || len(sess.Metadata) != 0 || len(sess.Summary) != 0 {
		t.Errorf("session after refused updates: metadata %s, summary %s, %v", sess.Metadata, sess.Summary, err)
	}
	for _, c := range []struct{ method, path, body string }{
		{"PATCH", "/sessions/s1", `{"metadata": {"k": 1}, "summary": {"summary": "s"}}`},
		{"PATCH", "/sessions/s1", `{"metadata": null}`},
		{"POST", "/sessions", `{"metadata": {"k": 1}}`},
	} {
		if res := do(t, c.method, ts.URL+c.path, strings.NewReader(c.body), jsonHeader); res.status/100 != 2 {
			t.Errorf("%s %s %s = %d %s, want 2xx", c.method, c.path, c.body, res.status, res.body)
		}
	}
}

// TestSessionDetail_ChatHistory: GET /sessions/{id} of an agent's session
// carries Agno's chat_history, the user and assistant messages of its runs
// in order (no system message, no history a run was given again), which
// was missing.
func TestSessionDetail_ChatHistory(t *testing.T) {
	t.Parallel()
	d := openSQLite(t, "history-db")
	a, err := agent.New(agent.Config{ID: "echo", Model: scripted.Reply("hi there"), DB: d, Instructions: agent.Instructions{"be brief"},
		AddHistoryToContext: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"first question", "second question"} {
		if _, err := a.Run(context.Background(), run.TextInput(msg), agent.WithSessionID("s1"), agent.WithUserID("alice")); err != nil {
			t.Fatal(err)
		}
	}
	// A run whose run_data is JSON but not a run (Agno's or another
	// writer's damage) is left out, not the whole detail.
	if _, err := d.UpsertRun(context.Background(), &db.Run{RunID: "bad", SessionID: "s1", RunType: run.TypeAgent, AgentID: "echo",
		UserID: "alice", Status: run.StatusCompleted, RunData: []byte(`{"run_id":"bad","messages":5}`)}); err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}}, nil)
	detail := decode[map[string]any](t, get(t, ts.URL+"/sessions/s1", nil))
	history, ok := detail["chat_history"].([]any)
	if !ok {
		t.Fatalf("GET /sessions/s1 has no chat_history: %v", detail)
	}
	var got []string
	for _, m := range history {
		m := m.(map[string]any)
		got = append(got, fmt.Sprint(m["role"], ":", m["content"]))
	}
	want := "[user:first question assistant:hi there user:second question assistant:hi there]"
	if fmt.Sprint(got) != want {
		t.Errorf("chat_history = %v, want %s", got, want)
	}
}

// TestSessionDetail_WorkflowSessionData: a workflow session's detail carries
// its whole session_data, as Agno's WorkflowSessionDetailSchema; it was
// missing. Agent sessions keep Agno's shape without it.
func TestSessionDetail_WorkflowSessionData(t *testing.T) {
	t.Parallel()
	d := openSQLite(t, "wf-db")
	ctx := context.Background()
	for _, s := range []db.Session{
		{SessionID: "w1", SessionType: run.TypeWorkflow, WorkflowID: "flow", SessionData: []byte(`{"session_state":{"k":1},"extra":"kept"}`)},
		{SessionID: "a1", SessionType: run.TypeAgent, AgentID: "echo", SessionData: []byte(`{"session_state":{"k":2}}`)},
	} {
		if _, err := d.UpsertSession(ctx, &s); err != nil {
			t.Fatal(err)
		}
	}
	ts, _ := testServer(t, Config{DBs: []*db.DB{d}}, nil)
	wf := decode[map[string]any](t, get(t, ts.URL+"/sessions/w1", nil))
	if sd, ok := wf["session_data"].(map[string]any); !ok || sd["extra"] != "kept" || sd["session_state"].(map[string]any)["k"] != 1.0 {
		t.Errorf("workflow session detail session_data = %v", wf["session_data"])
	}
	if ag := decode[map[string]any](t, get(t, ts.URL+"/sessions/a1", nil)); ag["session_data"] != nil {
		t.Errorf("agent session detail has session_data %v, which Agno's agent detail has not", ag["session_data"])
	}
}
