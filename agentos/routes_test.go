package agentos

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// fixture is a server with one agent on an in-memory database holding one
// session (and run) for alice and one for bob.
type fixture struct {
	url      string
	db       *db.DB
	aliceRun string
	bobRun   string
	// Set by newIsolationFixture: alice's and bob's team and workflow runs.
	aliceTeamRun, bobTeamRun         string
	aliceWorkflowRun, bobWorkflowRun string
}

func newFixture(t *testing.T, cfg Config) fixture { return newFixtureWith(t, cfg, nil) }

// newFixtureWith is newFixture; extra, when set, adds components serving the
// fixture's database (and their rows) to cfg before the server starts.
func newFixtureWith(t *testing.T, cfg Config, extra func(f *fixture, echo *agent.Agent, cfg *Config)) fixture {
	t.Helper()
	return newFixtureOn(t, db.New("mem-db", memory.New()), cfg, extra)
}

// newFixtureOn is newFixtureWith on the database d.
func newFixtureOn(t *testing.T, d *db.DB, cfg Config, extra func(f *fixture, echo *agent.Agent, cfg *Config)) fixture {
	t.Helper()
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Description: "Echoes.", Model: scripted.Reply("hi there"), DB: d,
		Instructions: agent.Instructions{"be brief"}, AddHistoryToContext: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f := fixture{db: d}
	for _, u := range []struct {
		user, session string
		runID         *string
	}{{"alice", "s-alice", &f.aliceRun}, {"bob", "s-bob", &f.bobRun}} {
		out, err := a.Run(ctx, run.TextInput("hello from "+u.user), agent.WithSessionID(u.session), agent.WithUserID(u.user))
		if err != nil {
			t.Fatal(err)
		}
		*u.runID = out.RunID
	}
	cfg.Agents = []*agent.Agent{a}
	if extra != nil {
		extra(&f, a, &cfg)
	}
	ts, _ := testServer(t, cfg, nil)
	f.url = ts.URL
	return f
}

func decode[T any](t *testing.T, res response) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(res.body), &v); err != nil {
		t.Fatalf("decode %q: %v", res.body, err)
	}
	return v
}

func TestRootAndConfig_DescribeTheOS(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{ID: "os-1", Name: "Test OS", Version: "1.2.3"})
	root := decode[map[string]string](t, get(t, f.url+"/", nil))
	if root["id"] != "os-1" || root["name"] != "Test OS" || root["version"] != "1.2.3" {
		t.Errorf("GET / = %v", root)
	}
	cfg := decode[map[string]any](t, get(t, f.url+"/config", nil))
	agents := cfg["agents"].([]any)
	if cfg["os_id"] != "os-1" || len(agents) != 1 || agents[0].(map[string]any)["db_id"] != "mem-db" {
		t.Errorf("GET /config = %v", cfg)
	}
	for _, k := range []string{"teams", "workflows", "interfaces", "databases", "available_models"} {
		if _, ok := cfg[k].([]any); !ok {
			t.Errorf("config %s = %v, want an array", k, cfg[k])
		}
	}
	if dbs := cfg["databases"].([]any); len(dbs) != 1 || dbs[0] != "mem-db" {
		t.Errorf("databases = %v", dbs)
	}
}

func TestAgents_ListAndDetail(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	list := decode[[]map[string]any](t, get(t, f.url+"/agents", nil))
	if len(list) != 1 || list[0]["id"] != "echo" || list[0]["db_id"] != "mem-db" || list[0]["name"] != "Echo" {
		t.Fatalf("GET /agents = %v", list)
	}
	one := decode[map[string]any](t, get(t, f.url+"/agents/echo", nil))
	if one["id"] != "echo" || one["db_id"] != "mem-db" || one["model"] == nil ||
		one["sessions"].(map[string]any)["add_history_to_context"] != true ||
		one["system_message"].(map[string]any)["instructions"].([]any)[0] != "be brief" {
		t.Errorf("GET /agents/echo = %v", one)
	}
	if res := get(t, f.url+"/agents/nope", nil); res.status != 404 || res.detail(t) != "Agent not found" {
		t.Errorf("unknown agent = %d %s", res.status, res.body)
	}
	for _, p := range []string{"/teams", "/workflows"} {
		if res := get(t, f.url+p, nil); res.status != 200 || res.body != "[]\n" {
			t.Errorf("GET %s = %d %q, want an empty array", p, res.status, res.body)
		}
	}
}

func TestSessions_ListGetAndRuns(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	page := decode[paginated[map[string]any]](t, get(t, f.url+"/sessions?type=agent&limit=10&sort_by=created_at&sort_order=asc", nil))
	if len(page.Data) != 2 || page.Meta.TotalCount != 2 || page.Meta.Limit != 10 || page.Meta.TotalPages != 1 {
		t.Fatalf("GET /sessions = %+v", page)
	}
	if s := page.Data[0]; s["session_type"] != "agent" || s["agent_id"] != "echo" || !strings.HasSuffix(s["created_at"].(string), "Z") {
		t.Errorf("session view = %v", s)
	}
	alice := decode[paginated[map[string]any]](t, get(t, f.url+"/sessions?user_id=alice&component_id=echo", nil))
	if len(alice.Data) != 1 || alice.Data[0]["session_id"] != "s-alice" {
		t.Errorf("filtered list = %+v", alice)
	}
	bad := []string{"?limit=0", "?limit=-1", "?page=0", "?sort_by=" + url.QueryEscape("created_at;drop table agno_sessions"), "?sort_order=up", "?type=robot"}
	for _, q := range bad {
		if res := get(t, f.url+"/sessions"+q, nil); res.status != 422 {
			t.Errorf("GET /sessions%s = %d %s", q, res.status, res.body)
		}
	}
	if res := get(t, f.url+"/sessions?db_id=other", nil); res.status != 404 {
		t.Errorf("unknown db_id = %d", res.status)
	}
	detail := decode[map[string]any](t, get(t, f.url+"/sessions/s-alice", nil))
	if detail["session_id"] != "s-alice" || detail["user_id"] != "alice" || detail["agent_session_id"] != "s-alice" {
		t.Errorf("GET /sessions/s-alice = %v", detail)
	}
	if res := get(t, f.url+"/sessions/missing", nil); res.status != 404 || res.detail(t) != "Session with ID missing not found" {
		t.Errorf("missing session = %d %s", res.status, res.body)
	}
	if res := get(t, f.url+"/sessions/s-alice?type=team", nil); res.status != 404 {
		t.Errorf("wrong type = %d", res.status)
	}
	runs := decode[[]map[string]any](t, get(t, f.url+"/sessions/s-alice/runs", nil))
	if len(runs) != 1 || runs[0]["run_id"] != f.aliceRun || runs[0]["run_input"] != "hello from alice" ||
		runs[0]["content"] != "hi there" || runs[0]["status"] != "COMPLETED" || runs[0]["agent_id"] != "echo" {
		t.Fatalf("GET /sessions/s-alice/runs = %v", runs)
	}
	one := decode[map[string]any](t, get(t, f.url+"/sessions/s-alice/runs/"+f.aliceRun, nil))
	if one["run_id"] != f.aliceRun {
		t.Errorf("GET run = %v", one)
	}
	if res := get(t, f.url+"/sessions/s-alice/runs/"+f.bobRun, nil); res.status != 404 {
		t.Errorf("run of another session = %d", res.status)
	}
}

func TestSessions_CreateRenamePatchDelete(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	jsonHdr := map[string]string{"Content-Type": "application/json"}
	res := do(t, "POST", f.url+"/sessions?type=agent", strings.NewReader(`{"session_id":"new-1","session_name":"First","session_state":{"n":1},"agent_id":"echo","user_id":"carol"}`), jsonHdr)
	if res.status != 201 || !contains(res.body, `"session_name":"First"`, `"session_state":{"n":1}`, `"user_id":"carol"`) {
		t.Fatalf("POST /sessions = %d %s", res.status, res.body)
	}
	if res := do(t, "POST", f.url+"/sessions", strings.NewReader(`{"session_id":"new-1"}`), jsonHdr); res.status != 409 {
		t.Errorf("duplicate create = %d", res.status)
	}
	if res := do(t, "POST", f.url+"/sessions", strings.NewReader(`{"bogus":1}`), jsonHdr); res.status != 422 {
		t.Errorf("unknown field = %d", res.status)
	}
	if res := do(t, "POST", f.url+"/sessions/new-1/rename", strings.NewReader(`{"session_name":"Renamed"}`), jsonHdr); res.status != 200 || !strings.Contains(res.body, `"session_name":"Renamed"`) {
		t.Errorf("rename = %d %s", res.status, res.body)
	}
	if res := do(t, "POST", f.url+"/sessions/new-1/rename", strings.NewReader(`{"session_name":""}`), jsonHdr); res.status != 422 {
		t.Errorf("empty rename = %d", res.status)
	}
	res = do(t, "PATCH", f.url+"/sessions/new-1", strings.NewReader(`{"session_state":{"n":2},"metadata":{"m":true}}`), jsonHdr)
	if res.status != 200 || !contains(res.body, `"session_name":"Renamed"`, `"session_state":{"n":2}`, `"metadata":{"m":true}`) {
		t.Errorf("patch = %d %s", res.status, res.body)
	}
	if res := do(t, "DELETE", f.url+"/sessions/new-1", nil, nil); res.status != 204 {
		t.Errorf("delete = %d", res.status)
	}
	if res := get(t, f.url+"/sessions/new-1", nil); res.status != 404 {
		t.Errorf("deleted session = %d", res.status)
	}
	if res := do(t, "DELETE", f.url+"/sessions/new-1", nil, nil); res.status != 404 {
		t.Errorf("delete again = %d", res.status)
	}
	if res := do(t, "DELETE", f.url+"/sessions", strings.NewReader(`{"session_ids":["s-alice","s-bob"],"session_types":["agent","agent"]}`), jsonHdr); res.status != 204 {
		t.Errorf("bulk delete = %d %s", res.status, res.body)
	}
	if page := decode[paginated[map[string]any]](t, get(t, f.url+"/sessions", nil)); page.Meta.TotalCount != 0 {
		t.Errorf("sessions after bulk delete = %+v", page)
	}
	if res := do(t, "DELETE", f.url+"/sessions", strings.NewReader(`{"session_ids":[]}`), jsonHdr); res.status != 422 {
		t.Errorf("empty bulk delete = %d", res.status)
	}
}

// TestUserIsolation_SessionRoutes runs each session route as the owner, another
// user, an admin and without a token.
func TestUserIsolation_SessionRoutes(t *testing.T) {
	t.Parallel()
	jsonHdr := func(h map[string]string) map[string]string {
		out := map[string]string{"Content-Type": "application/json"}
		for k, v := range h {
			out[k] = v
		}
		return out
	}
	alice := bearer(hsToken(t, jwt.MapClaims{"sub": "alice"}))
	bob := bearer(hsToken(t, jwt.MapClaims{"sub": "bob"}))
	admin := bearer(hsToken(t, jwt.MapClaims{"sub": "root", "scopes": []string{auth.AdminScope}}))
	type call struct {
		method, path, body string
	}
	routes := func(f fixture) []call {
		return []call{
			{"GET", "/sessions/s-alice", ""},
			{"GET", "/sessions/s-alice/runs", ""},
			{"GET", "/sessions/s-alice/runs/" + f.aliceRun, ""},
			{"POST", "/sessions/s-alice/rename", `{"session_name":"x"}`},
			{"PATCH", "/sessions/s-alice", `{"session_state":{"x":1}}`},
			{"DELETE", "/sessions/s-alice", ""},
		}
	}
	callers := []struct {
		name   string
		header map[string]string
		want   func(method string) int
	}{
		{"owner", alice, func(m string) int { return map[string]int{"GET": 200, "POST": 200, "PATCH": 200, "DELETE": 204}[m] }},
		{"other user", bob, func(string) int { return 404 }},
		{"admin", admin, func(m string) int { return map[string]int{"GET": 200, "POST": 200, "PATCH": 200, "DELETE": 204}[m] }},
		{"no token", nil, func(string) int { return 401 }},
	}
	for _, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, Config{UserIsolation: true, Auth: Auth{Authenticator: jwtAuthenticator(t, "")}})
			for _, rt := range routes(f) {
				var res response
				if rt.body == "" {
					res = do(t, rt.method, f.url+rt.path, nil, c.header)
				} else {
					res = do(t, rt.method, f.url+rt.path, strings.NewReader(rt.body), jsonHdr(c.header))
				}
				if want := c.want(rt.method); res.status != want {
					t.Errorf("%s %s = %d %s, want %d", rt.method, rt.path, res.status, res.body, want)
				}
			}
			// Whatever happened, alice's session is intact unless its owner or an admin deleted it.
			s, err := f.db.GetSession(context.Background(), "s-alice")
			deleted := c.name == "owner" || c.name == "admin"
			if deleted != (err != nil) {
				t.Errorf("s-alice after %s: %v %v", c.name, s, err)
			}
			if !deleted && strings.Contains(string(s.SessionData), `"x"`) {
				t.Errorf("%s changed alice's session: %s", c.name, s.SessionData)
			}
		})
	}
}

func TestUserIsolation_ListsAndBulkDeleteStayInScope(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{UserIsolation: true, Auth: Auth{Authenticator: jwtAuthenticator(t, "")}})
	alice := bearer(hsToken(t, jwt.MapClaims{"sub": "alice"}))
	for _, q := range []string{"", "?user_id=bob", "?user_id="} {
		page := decode[paginated[map[string]any]](t, get(t, f.url+"/sessions"+q, alice))
		if len(page.Data) != 1 || page.Data[0]["session_id"] != "s-alice" || page.Meta.TotalCount != 1 {
			t.Errorf("alice lists %s = %+v", q, page)
		}
	}
	res := do(t, "DELETE", f.url+"/sessions", strings.NewReader(`{"session_ids":["s-bob"],"session_types":["agent"]}`),
		map[string]string{"Authorization": alice["Authorization"], "Content-Type": "application/json"})
	if res.status != 204 {
		t.Errorf("bulk delete = %d", res.status)
	}
	if _, err := f.db.GetSession(context.Background(), "s-bob"); err != nil {
		t.Errorf("alice deleted bob's session: %v", err)
	}
	res = do(t, "POST", f.url+"/sessions", strings.NewReader(`{"session_id":"mine","user_id":"bob"}`),
		map[string]string{"Authorization": alice["Authorization"], "Content-Type": "application/json"})
	if res.status != 201 || !strings.Contains(res.body, `"user_id":"alice"`) {
		t.Errorf("create as alice with user_id=bob = %d %s", res.status, res.body)
	}
	if res := get(t, f.url+"/sessions/s-bob", alice); res.status != http.StatusNotFound || res.detail(t) != "Session with ID s-bob not found" {
		t.Errorf("bob's session seen by alice = %d %s", res.status, res.body)
	}
}
