package agentos

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// A row another writer left undecodable (a timestamp that is no number,
// text that is not JSON: SQLite stores them) is left out of the list
// endpoints, which serve the other rows and log it, instead of failing every
// listing with a 500.
func TestLists_UndecodableRowIsLeftOutNotA500(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: scripted.Reply("hi"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	var runIDs []string
	for _, sid := range []string{"s1", "s2", "s2", "s2", "s3"} {
		out, err := a.Run(ctx, run.TextInput("hello"), agent.WithSessionID(sid))
		if err != nil {
			t.Fatal(err)
		}
		if sid == "s2" {
			runIDs = append(runIDs, out.RunID)
		}
	}
	for _, id := range []string{"m1", "m2", "m3"} {
		if _, err := d.UpsertMemory(ctx, &db.Memory{MemoryID: id, Memory: "fact " + id, UserID: "u"}); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := sqlstore.FromDB(d)
	for _, q := range []string{
		`UPDATE agno_sessions SET session_data = '{"session_name": "half' WHERE session_id = 's1'`,
		`UPDATE agno_sessions SET created_at = 'yesterday' WHERE session_id = 's3'`,
		`UPDATE agno_runs SET updated_at = 'yesterday' WHERE run_id = '` + runIDs[1] + `'`,
		`UPDATE agno_memories SET created_at = 'yesterday' WHERE memory_id = 'm2'`,
	} {
		if _, err := st.SQL().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	ts, logs := testServer(t, Config{Agents: []*agent.Agent{a}}, nil)

	ids := func(path, key string) []string {
		t.Helper()
		res := get(t, ts.URL+path, nil)
		if res.status != 200 {
			t.Fatalf("GET %s = %d %s", path, res.status, res.body)
		}
		var out []string
		if strings.Contains(path, "/runs") {
			for _, v := range decode[[]map[string]any](t, res) {
				out = append(out, v[key].(string))
			}
			return out
		}
		for _, v := range decode[paginated[map[string]any]](t, res).Data {
			out = append(out, v[key].(string))
		}
		return out
	}
	if got := ids("/sessions", "session_id"); !slices.Equal(got, []string{"s2"}) {
		t.Errorf("GET /sessions lists %v, want s2 (s1 and s3 do not decode)", got)
	}
	if got := ids("/memories?user_id=u", "memory_id"); len(got) != 2 || slices.Contains(got, "m2") {
		t.Errorf("GET /memories lists %v, want m1 and m3", got)
	}
	if got := ids("/sessions/s2/runs", "run_id"); !slices.Equal(got, []string{runIDs[0], runIDs[2]}) {
		t.Errorf("GET /sessions/s2/runs lists %v, want %v", got, []string{runIDs[0], runIDs[2]})
	}
	if !strings.Contains(logs.String(), "unreadable rows left out") {
		t.Errorf("the left-out rows were not logged:\n%s", logs.String())
	}
}

// A session and runs whose timestamps another writer stored as REALs
// (Python's time.time(), not int(time.time()) as Agno writes) are read, to
// the second: GET /sessions/{id} answers, a turn on the session runs and a
// metrics refresh counts the runs.
func TestSession_RealTimestampsAreRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: scripted.Reply("hi"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(ctx, run.TextInput("hello"), agent.WithSessionID("s")); err != nil {
		t.Fatal(err)
	}
	st, _ := sqlstore.FromDB(d)
	for _, q := range []string{
		`UPDATE agno_sessions SET created_at = 1733000000.5, updated_at = 1733000001.25 WHERE session_id = 's'`,
		`UPDATE agno_runs SET created_at = 1733000000.75, updated_at = 1733000002.5 WHERE session_id = 's'`,
	} {
		if _, err := st.SQL().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}}, nil)
	res := get(t, ts.URL+"/sessions/s", nil)
	if res.status != 200 {
		t.Fatalf("GET /sessions/s = %d %s", res.status, res.body)
	}
	if got := decode[map[string]any](t, res)["created_at"]; got == nil {
		t.Fatalf("GET /sessions/s has no created_at: %s", res.body)
	}
	if _, err := a.Run(ctx, run.TextInput("again"), agent.WithSessionID("s")); err != nil {
		t.Fatalf("a turn on the session: %v", err)
	}
	res = do(t, "POST", ts.URL+"/metrics/refresh", nil, nil)
	if res.status != 200 {
		t.Fatalf("POST /metrics/refresh = %d %s", res.status, res.body)
	}
	var runs float64
	for _, day := range decode[[]map[string]any](t, res) {
		if n, ok := day["agent_runs_count"].(float64); ok {
			runs += n
		}
	}
	if runs != 2 {
		t.Fatalf("POST /metrics/refresh counted %v agent runs, want 2: %s", runs, res.body)
	}
}

// A run another writer left undecodable is left out of a metrics refresh,
// which counts the others and logs it, instead of answering 500.
func TestRefreshMetrics_UndecodableRunIsLeftOutNotA500(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: scripted.Reply("hi"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	var runIDs []string
	for range 3 {
		out, err := a.Run(ctx, run.TextInput("hello"), agent.WithSessionID("s"))
		if err != nil {
			t.Fatal(err)
		}
		runIDs = append(runIDs, out.RunID)
	}
	st, _ := sqlstore.FromDB(d)
	if _, err := st.SQL().ExecContext(ctx, `UPDATE agno_runs SET run_data = '{"half' WHERE run_id = ?`, runIDs[1]); err != nil {
		t.Fatal(err)
	}
	ts, logs := testServer(t, Config{Agents: []*agent.Agent{a}}, nil)
	res := do(t, "POST", ts.URL+"/metrics/refresh", nil, nil)
	if res.status != 200 {
		t.Fatalf("POST /metrics/refresh = %d %s", res.status, res.body)
	}
	var runs float64
	for _, day := range decode[[]map[string]any](t, res) {
		if n, ok := day["agent_runs_count"].(float64); ok {
			runs += n
		}
	}
	if runs != 2 {
		t.Fatalf("POST /metrics/refresh counted %v agent runs, want the 2 readable ones: %s", runs, res.body)
	}
	if !strings.Contains(logs.String(), runIDs[1]) {
		t.Errorf("the left-out run was not logged:\n%s", logs.String())
	}
}

// Renaming a session or replacing its state rewrites session_data: integers
// beyond float64's precision that another writer (Python) stored, in the
// state or in fields Agentry does not know, and those a client sends, are
// kept exactly, and shown exactly.
func TestSessions_RenameAndStateKeepLargeIntegers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := db.New("mem", memory.New())
	stored := `{"session_state":{"chat_id":1234567890123456789,"n":1},"future_field":{"snowflake":9007199254740993}}`
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent, SessionData: json.RawMessage(stored)}); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{ID: "echo", Model: scripted.Reply("hi"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}}, nil)
	res := do(t, "POST", ts.URL+"/sessions/s/rename", strings.NewReader(`{"session_name":"named"}`), jsonHeader)
	if res.status != 200 || !strings.Contains(res.body, `"chat_id":1234567890123456789`) {
		t.Fatalf("rename = %d %s, want the state's chat_id exact", res.status, res.body)
	}
	s, err := d.GetSession(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1234567890123456789", "9007199254740993", `"named"`} {
		if !strings.Contains(string(s.SessionData), want) {
			t.Errorf("session_data after rename = %s, want %s kept", s.SessionData, want)
		}
	}
	res = do(t, "PATCH", ts.URL+"/sessions/s", strings.NewReader(`{"session_state":{"chat_id":1234567890123456791}}`), jsonHeader)
	if res.status != 200 {
		t.Fatalf("PATCH = %d %s", res.status, res.body)
	}
	if s, err = d.GetSession(ctx, "s"); err != nil || !strings.Contains(string(s.SessionData), "1234567890123456791") ||
		!strings.Contains(string(s.SessionData), "9007199254740993") {
		t.Errorf("session_data after PATCH = %s (%v), want the sent chat_id and future_field exact", s.SessionData, err)
	}
}

// The control plane's lists (evals, approvals, schedules, components) serve
// the rows that decode and leave out one whose JSON another writer broke,
// as sessions, runs and memories do.
func TestControlPlaneLists_UndecodableRowIsLeftOutNotA500(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: scripted.Reply("hi"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"x1", "x2", "x3"} {
		if _, err := d.CreateEvalRun(ctx, &db.EvalRun{RunID: id, EvalType: "accuracy", AgentID: "echo", EvalData: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if err := d.CreateApproval(ctx, &db.Approval{ID: id, RunID: "r" + id, SessionID: "s", SourceType: "agent", PauseType: "confirmation",
			AgentID: "echo", CreatedAt: int64(100 + i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.CreateSchedule(ctx, &db.Schedule{ID: id, Name: id, Method: "POST", Endpoint: "/agents/echo/runs", CronExpr: "*/5 * * * *",
			Timezone: "UTC", TimeoutSeconds: 60, Enabled: true, NextRunAt: 4_000_000_000, TargetType: "agent", TargetID: "echo", CreatedAt: int64(100 + i)}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := d.CreateComponent(ctx, &db.Component{ComponentID: id, ComponentType: db.ComponentAgent, Name: id},
			&db.ComponentConfig{Config: json.RawMessage(`{"model":"scripted:x"}`)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := sqlstore.FromDB(d)
	for _, q := range []string{
		`UPDATE agno_eval_runs SET eval_data = '{"broken' WHERE run_id = 'x2'`,
		`UPDATE agno_approvals SET context = '{"broken' WHERE id = 'x2'`,
		`UPDATE agno_schedules SET payload = '{"broken' WHERE id = 'x2'`,
		`UPDATE agno_components SET metadata = '{"broken' WHERE component_id = 'x2'`,
	} {
		if _, err := st.SQL().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	ts, logs := testServer(t, Config{Agents: []*agent.Agent{a}}, nil)
	for _, path := range []string{"/eval-runs", "/approvals", "/schedules", "/components"} {
		res := get(t, ts.URL+path, nil)
		if res.status != 200 {
			t.Fatalf("GET %s = %d %s", path, res.status, res.body)
		}
		var got []string
		for _, v := range decode[paginated[map[string]any]](t, res).Data {
			id, _ := v["id"].(string)
			if id == "" {
				id, _ = v["component_id"].(string)
			}
			got = append(got, id)
		}
		slices.Sort(got)
		if !slices.Equal(got, []string{"x1", "x3"}) {
			t.Errorf("GET %s lists %v, want x1 and x3", path, got)
		}
	}
	if n := strings.Count(logs.String(), "unreadable rows left out"); n != 4 {
		t.Errorf("%d lists logged left-out rows, want 4:\n%s", n, logs.String())
	}
}

// GET /sessions/{id}/runs/{run_id} of a run whose run_data does not decode
// answers a 500 naming the run, never its content, and logs it once.
func TestGetSessionRun_UndecodableRunNamesIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: scripted.Reply("hi"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.Run(ctx, run.TextInput("hello"), agent.WithSessionID("s"))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := sqlstore.FromDB(d)
	if _, err := st.SQL().ExecContext(ctx, `UPDATE agno_runs SET run_data = '{"secret": "hunter2' WHERE run_id = ?`, out.RunID); err != nil {
		t.Fatal(err)
	}
	ts, logs := testServer(t, Config{Agents: []*agent.Agent{a}}, nil)
	res := get(t, ts.URL+"/sessions/s/runs/"+out.RunID, nil)
	if res.status != 500 || !strings.Contains(res.body, out.RunID) || !strings.Contains(res.body, "stored data cannot be read") ||
		strings.Contains(res.body, "hunter2") {
		t.Fatalf("GET run = %d %s, want a 500 naming %s", res.status, res.body, out.RunID)
	}
	if n := strings.Count(logs.String(), `"msg":"request failed"`); n != 1 {
		t.Errorf("the failure was logged %d times, want once:\n%s", n, logs.String())
	}
}

// A run started with a session_state or metadata holding integers beyond
// float64's precision (a chat id) stores them as sent, and the stored
// state's own large integers survive the run's save; the form's JSON was
// read as float64, so they were rounded.
func TestCreateRun_FormStateKeepsLargeIntegers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := db.New("mem", memory.New())
	stored := `{"session_state":{"thread":9007199254740993}}`
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent, AgentID: "echo", SessionData: json.RawMessage(stored)}); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{ID: "echo", Model: scripted.Reply("hi"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}}, nil)
	form := url.Values{"message": {"hi"}, "session_id": {"s"}, "stream": {"false"},
		"session_state": {`{"chat_id":1234567890123456789}`}, "metadata": {`{"trace":18446744073709551615}`}}
	res := do(t, "POST", ts.URL+"/agents/echo/runs", strings.NewReader(form.Encode()), map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if res.status != 200 {
		t.Fatalf("run = %d %s", res.status, res.body)
	}
	s, err := d.GetSession(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"chat_id":1234567890123456789`, `"thread":9007199254740993`} {
		if !strings.Contains(string(s.SessionData), want) {
			t.Errorf("session_data = %s, want %s", s.SessionData, want)
		}
	}
	if !strings.Contains(res.body, "18446744073709551615") {
		t.Errorf("run answer = %s, want the metadata's trace exact", res.body)
	}
}
