package agentos

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// claimsKey is the security key of the claims servers.
const claimsKey = "claims-os-key-0123456789abcdef"

// claimsServer serves an agent (echo), a team (squad) and a workflow (flow)
// on a SQLite file, verifying HS256 tokens whose session id claim is "sid"
// (and claimsKey). authn false serves them open.
func claimsServer(t *testing.T, isolation, authn bool) (string, *db.DB) {
	t.Helper()
	return claimsServerWith(t, isolation, authn, nil)
}

// claimsServerWith is claimsServer; mod, when set, changes the config
// before the server starts.
func claimsServerWith(t *testing.T, isolation, authn bool, mod func(*Config)) (string, *db.DB) {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "claims.db"), ID: "db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	echo, squad, flow := echoSquadFlow(t, d, "hi there")
	cfg := Config{UserIsolation: isolation, Agents: []*agent.Agent{echo}, Teams: []*team.Team{squad}, Workflows: []*workflow.Workflow{flow}}
	if authn {
		k, err := auth.ParseKey("", testSecret)
		if err != nil {
			t.Fatal(err)
		}
		v, err := auth.NewJWTVerifier(auth.JWTConfig{Keys: []auth.Key{k}, Algorithms: []string{"HS256"}, SessionIDClaim: "sid"})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Auth.Authenticator, err = auth.NewAuthenticator(claimsKey, v); err != nil {
			t.Fatal(err)
		}
	}
	if mod != nil {
		mod(&cfg)
	}
	ts, _ := testServer(t, cfg, nil)
	return ts.URL, d
}

// storedRun checks that a non-streamed run answer is 200 and returns its
// stored row.
func storedRun(t *testing.T, d *db.DB, res response) *db.Run {
	t.Helper()
	var out struct {
		RunID string `json:"run_id"`
	}
	if res.status != http.StatusOK || json.Unmarshal([]byte(res.body), &out) != nil || out.RunID == "" {
		t.Fatalf("run = %d %s", res.status, res.body)
	}
	row, err := d.GetRun(context.Background(), out.RunID)
	if err != nil {
		t.Fatal(err)
	}
	return row
}

var runPaths = map[string]string{"agent": "/agents/echo", "team": "/teams/squad", "workflow": "/workflows/flow"}

// TestRuns_SessionIDClaimOverridesTheRequest: with session_id_claim
// configured, a token's session id is the session of the runs it starts and
// continues, whatever session_id the form names (as in Agno); before, the
// claim was read into the principal and ignored.
func TestRuns_SessionIDClaimOverridesTheRequest(t *testing.T) {
	t.Parallel()
	for _, isolation := range []bool{false, true} {
		u, d := claimsServer(t, isolation, true)
		tok := bearer(hsToken(t, jwt.MapClaims{"sub": "alice", "sid": "s1"}))
		for kind, p := range runPaths {
			for _, fields := range []map[string]string{
				{"message": "hello", "stream": "false", "session_id": "s2"},
				{"message": "hello", "stream": "false"},
			} {
				row := storedRun(t, d, postForm(t, u+p+"/runs", fields, tok))
				if row.SessionID != "s1" || row.UserID != "alice" {
					t.Errorf("isolation %v: %s run with session_id %q stored in session %q for %q, want s1 for alice",
						isolation, kind, fields["session_id"], row.SessionID, row.UserID)
				}
			}
		}
		if _, err := d.GetSession(context.Background(), "s2"); err == nil {
			t.Errorf("isolation %v: session s2 was created", isolation)
		}
		// A token without the claim keeps the request's session_id.
		row := storedRun(t, d, postForm(t, u+"/agents/echo/runs", map[string]string{"message": "hello", "stream": "false", "session_id": "s3"},
			bearer(hsToken(t, jwt.MapClaims{"sub": "alice"}))))
		if row.SessionID != "s3" {
			t.Errorf("isolation %v: run without a session claim stored in %q, want s3", isolation, row.SessionID)
		}
	}
}

// TestContinue_SessionIDClaimOverridesTheRequest: continue looks the run up
// in the token's session: a run in the token's session is found whatever
// session_id the form names (here it is not paused: 409), and a run in
// another session is 404 even when the form names that session.
func TestContinue_SessionIDClaimOverridesTheRequest(t *testing.T) {
	t.Parallel()
	u, d := claimsServer(t, false, true)
	ctx := context.Background()
	for _, o := range []run.Output{
		{RunID: "run-agent-1", AgentID: "echo", SessionID: "agent-1"},
		{RunID: "run-agent-2", AgentID: "echo", SessionID: "agent-2"},
		{RunID: "run-team-1", TeamID: "squad", SessionID: "team-1"},
		{RunID: "run-team-2", TeamID: "squad", SessionID: "team-2"},
		{RunID: "run-workflow-1", WorkflowID: "flow", SessionID: "workflow-1"},
		{RunID: "run-workflow-2", WorkflowID: "flow", SessionID: "workflow-2"},
	} {
		o.UserID, o.Status, o.CreatedAt = "alice", run.StatusCompleted, time.Now().Unix()
		row, err := db.RunFromOutput(&o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.UpsertSession(ctx, &db.Session{SessionID: o.SessionID, SessionType: o.Type(), UserID: "alice",
			AgentID: o.AgentID, TeamID: o.TeamID, WorkflowID: o.WorkflowID}); err != nil {
			t.Fatal(err)
		}
		if _, err := d.UpsertRun(ctx, row); err != nil {
			t.Fatal(err)
		}
	}
	for kind, p := range runPaths {
		tok := bearer(hsToken(t, jwt.MapClaims{"sub": "alice", "sid": kind + "-1"}))
		for runID, want := range map[string]int{"run-" + kind + "-1": http.StatusConflict, "run-" + kind + "-2": http.StatusNotFound} {
			res := postForm(t, u+p+"/runs/"+runID+"/continue", map[string]string{"session_id": kind + "-2", "tools": "[]", "step_requirements": "[]"}, tok)
			if res.status != want {
				t.Errorf("continue %s run %s with session_id %s-2 and a token for %s-1 = %d %s, want %d", kind, runID, kind, kind, res.status, res.body, want)
			}
		}
	}
}

// TestRuns_TokenUserIsTheRunsUser: as in Agno, a run is attributed to its
// token's user whatever user_id the form names, for an admin too and with
// user isolation off; only the security key and an open server run as the
// form's user_id. Before, with isolation off (or for an admin) the form's
// user_id won.
func TestRuns_TokenUserIsTheRunsUser(t *testing.T) {
	t.Parallel()
	alice := bearer(hsToken(t, jwt.MapClaims{"sub": "alice"}))
	root := bearer(hsToken(t, jwt.MapClaims{"sub": "root", "scopes": []string{auth.AdminScope}}))
	key := bearer(claimsKey)
	for _, c := range []struct {
		name             string
		isolation, authn bool
		header           map[string]string
		want             string
	}{
		{"user, isolation off", false, true, alice, "alice"},
		{"user, isolation on", true, true, alice, "alice"},
		{"admin, isolation off", false, true, root, "root"},
		{"admin, isolation on", true, true, root, "root"},
		{"security key, isolation off", false, true, key, "bob"},
		{"security key, isolation on", true, true, key, "bob"},
		{"open server", false, false, nil, "bob"},
	} {
		u, d := claimsServer(t, c.isolation, c.authn)
		for kind, p := range runPaths {
			row := storedRun(t, d, postForm(t, u+p+"/runs", map[string]string{"message": "hello", "stream": "false", "user_id": "bob"}, c.header))
			s, err := d.GetSession(context.Background(), row.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			if row.UserID != c.want || s.UserID != c.want {
				t.Errorf("%s: %s run with user_id bob stored for %q in a session of %q, want %q", c.name, kind, row.UserID, s.UserID, c.want)
			}
		}
	}
}

// TestSessions_CreateAsTheTokenUser: POST /sessions stores the session for
// its token's user whatever user_id the body names (as Agno's create
// session), for an admin too and with user isolation off; the security key
// and an open server create it for the body's user_id.
func TestSessions_CreateAsTheTokenUser(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name             string
		isolation, authn bool
		header           map[string]string
		want             string
	}{
		{"user, isolation off", false, true, bearer(hsToken(t, jwt.MapClaims{"sub": "alice"})), "alice"},
		{"admin, isolation on", true, true, bearer(hsToken(t, jwt.MapClaims{"sub": "root", "scopes": []string{auth.AdminScope}})), "root"},
		{"security key", true, true, bearer(claimsKey), "bob"},
		{"open server", false, false, nil, "bob"},
	} {
		u, d := claimsServer(t, c.isolation, c.authn)
		h := map[string]string{"Content-Type": "application/json"}
		for k, v := range c.header {
			h[k] = v
		}
		res := do(t, http.MethodPost, u+"/sessions", strings.NewReader(`{"session_id":"s-new","user_id":"bob"}`), h)
		if res.status != http.StatusCreated {
			t.Fatalf("%s: POST /sessions = %d %s", c.name, res.status, res.body)
		}
		s, err := d.GetSession(context.Background(), "s-new")
		if err != nil {
			t.Fatal(err)
		}
		if s.UserID != c.want {
			t.Errorf("%s: session s-new stored for %q, want %q", c.name, s.UserID, c.want)
		}
	}
}

// TestWorkflowRuns_SessionIDClaimLimitsReads: as in Agno, reading a
// workflow's runs (GET …/runs, GET …/runs/{run_id}) with a token carrying
// the session id claim reads that session's runs, whatever session_id the
// query names. Agno applies the claim to no other read.
func TestWorkflowRuns_SessionIDClaimLimitsReads(t *testing.T) {
	t.Parallel()
	u, d := claimsServer(t, false, true)
	flow := "/workflows/flow/runs"
	key := bearer(claimsKey)
	var runs []string
	for _, s := range []string{"wf-1", "wf-2"} {
		runs = append(runs, storedRun(t, d, postForm(t, u+flow, map[string]string{"message": "hi", "stream": "false", "session_id": s, "user_id": "alice"}, key)).RunID)
	}
	tok := bearer(hsToken(t, jwt.MapClaims{"sub": "alice", "sid": "wf-1"}))
	for path, want := range map[string]int{
		flow + "/" + runs[0] + "?session_id=wf-2": http.StatusOK,
		flow + "/" + runs[1] + "?session_id=wf-2": http.StatusNotFound,
		flow + "/" + runs[1]:                      http.StatusNotFound,
	} {
		if res := get(t, u+path, tok); res.status != want {
			t.Errorf("GET %s with a token for wf-1 = %d %s, want %d", path, res.status, res.body, want)
		}
	}
	for _, q := range []string{"", "?session_id=wf-2"} {
		res := get(t, u+flow+q, tok)
		if res.status != http.StatusOK || !strings.Contains(res.body, runs[0]) || strings.Contains(res.body, runs[1]) {
			t.Errorf("GET %s%s with a token for wf-1 = %d %s, want wf-1's run only", flow, q, res.status, res.body)
		}
	}
}

// TestListings_PerObjectScopesFilter: with authorization on, a token whose
// only grants name single agents (teams, workflows), e.g. agents:echo:read,
// lists those (as Agno filters the listing by the caller's scopes); before,
// every such token was 403 on GET /agents. A token with no read grant on the
// resource is still 403.
func TestListings_PerObjectScopesFilter(t *testing.T) {
	t.Parallel()
	u, _ := claimsServerWith(t, false, true, func(c *Config) {
		c.Auth.Authorization = true
		other, err := agent.New(agent.Config{ID: "other", Name: "Other", Model: scripted.Reply("no")})
		if err != nil {
			t.Fatal(err)
		}
		c.Agents = append(c.Agents, other)
	})
	ids := func(body string) []string {
		var items []struct {
			ID string `json:"id"`
		}
		var out []string
		if err := json.Unmarshal([]byte(body), &items); err == nil {
			for _, it := range items {
				out = append(out, it.ID)
			}
		}
		return out
	}
	for _, c := range []struct {
		scopes []string
		path   string
		status int
		want   string
	}{
		{[]string{"agents:echo:read"}, "/agents", 200, "[echo]"},
		{[]string{"agents:*:read"}, "/agents", 200, "[echo other]"},
		{[]string{"agents:read"}, "/agents", 200, "[echo other]"},
		{[]string{"agents:echo:*"}, "/agents", 200, "[echo]"},
		{[]string{"agents:echo:run"}, "/agents", 403, ""},
		{[]string{"teams:squad:read"}, "/agents", 403, ""},
		{[]string{"teams:squad:read"}, "/teams", 200, "[squad]"},
		{[]string{"teams:other:read"}, "/teams", 200, "[]"},
		{[]string{"workflows:flow:read", "agents:other:read"}, "/workflows", 200, "[flow]"},
		{[]string{"workflows:flow:read", "agents:other:read"}, "/agents", 200, "[other]"},
		{[]string{auth.AdminScope}, "/agents", 200, "[echo other]"},
	} {
		res := get(t, u+c.path, bearer(hsToken(t, jwt.MapClaims{"sub": "alice", "scopes": c.scopes})))
		if res.status != c.status {
			t.Errorf("GET %s with %v = %d %s, want %d", c.path, c.scopes, res.status, res.body, c.status)
			continue
		}
		if got := fmt.Sprint(ids(res.body)); c.status == 200 && got != c.want {
			t.Errorf("GET %s with %v lists %s, want %s", c.path, c.scopes, got, c.want)
		}
	}
}

// echoSquadFlow builds on d an agent (echo, answering reply), a team of it
// (squad) and a workflow of one step running it (flow).
func echoSquadFlow(t *testing.T, d *db.DB, reply string) (*agent.Agent, *team.Team, *workflow.Workflow) {
	t.Helper()
	echo, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: scripted.Reply(reply), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	squad, err := team.New(team.Config{ID: "squad", Name: "Squad", Model: scripted.Reply("the team answer"), Members: []*agent.Agent{echo}, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	flow, err := workflow.New(workflow.Config{ID: "flow", Name: "Flow", DB: d, Steps: []workflow.Step{{Name: "echo", Runner: echo}}})
	if err != nil {
		t.Fatal(err)
	}
	return echo, squad, flow
}
