package mcpserver

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/tool"
)

// The OS verified the token with its clock-skew leeway: a token the HTTP
// routes accept is accepted on /mcp too (the SDK's own expiry check, with
// no leeway, used to answer 401).
func TestAuth_TokenWithinLeewayIsAccepted(t *testing.T) {
	leeway := time.Hour
	h := newHarness(t, harnessConfig{leeway: &leeway})
	tok := token(t, "alice", time.Now().Add(-time.Minute))
	if _, err := h.verifier.Verify(tok); err != nil {
		t.Fatalf("the verifier refuses the token: %v", err)
	}
	cs, err := h.connect(t, tok)
	if err != nil {
		t.Fatalf("a token within the leeway was refused: %v", err)
	}
	if r := callTool(t, cs, "get_sessions", nil); r.IsError {
		t.Fatalf("get_sessions: %q", resultText(r))
	}
	if _, err := h.connect(t, token(t, "alice", time.Now().Add(-2*time.Hour))); err == nil {
		t.Fatal("a token expired beyond the leeway was accepted")
	}
}

// With per-tool authorization on, a call that reached the server without a
// principal (a path excluded from authentication) is refused, as the HTTP
// routes refuse it, instead of being allowed every tool.
func TestAuth_AuthorizationRefusesCallsWithoutPrincipal(t *testing.T) {
	h := newHarness(t, harnessConfig{authz: true, excluded: true})
	anon := h.mustConnect(t, "")
	for name, args := range map[string]map[string]any{
		"get_agentos_config": nil,
		"get_sessions":       nil,
		"get_memories":       nil,
		"get_session_runs":   {"session_id": "s1"},
		"run_agent":          {"agent_id": "echo", "message": "x"},
		"cancel_run":         {"agent_id": "echo", "run_id": "r1"},
		"continue_run":       {"agent_id": "echo", "run_id": "r1"},
	} {
		r := callTool(t, anon, name, args)
		if !r.IsError || !strings.Contains(resultText(r), "insufficient permissions") {
			t.Errorf("%s without a principal = %q (error %v), want insufficient permissions", name, resultText(r), r.IsError)
		}
	}
	// A token with the scope is still served.
	reader := h.mustConnect(t, token(t, "alice", time.Now().Add(time.Hour), "sessions:read"))
	if r := callTool(t, reader, "get_sessions", nil); r.IsError {
		t.Fatalf("get_sessions with sessions:read: %q", resultText(r))
	}
}

// A tool served next to the built-in ones (mcp_server.tools) needs
// tools:<name>:run (or tools:run) when authorization is on, as every route
// needs its scope: a token allowed to read sessions cannot run it.
func TestAuth_UserToolsNeedTheirScope(t *testing.T) {
	var calls atomic.Int32
	secret := tool.MustFunc(tool.FuncConfig{Name: "run_sql", Description: "Runs SQL."},
		func(context.Context, struct{}) (string, error) { calls.Add(1); return "42 rows", nil })
	h := newHarness(t, harnessConfig{authz: true, options: Options{Tools: []tool.Tool{secret}}})
	hour := time.Now().Add(time.Hour)
	for _, c := range []struct {
		scopes []string
		allow  bool
	}{
		{[]string{"sessions:read", "agents:run"}, false},
		{[]string{"tools:other:run"}, false},
		{[]string{"tools:run_sql:read"}, false},
		{nil, false},
		{[]string{"tools:run_sql:run"}, true},
		{[]string{"tools:run"}, true},
		{[]string{"agent_os:admin"}, true},
	} {
		before := calls.Load()
		cs := h.mustConnect(t, token(t, "alice", hour, c.scopes...))
		r := callTool(t, cs, "run_sql", map[string]any{})
		ran := calls.Load() != before
		if c.allow && (r.IsError || !ran || resultText(r) != "42 rows") {
			t.Errorf("scopes %v: run_sql = %q (error %v, ran %v), want it run", c.scopes, resultText(r), r.IsError, ran)
		}
		if !c.allow && (!r.IsError || ran || !strings.Contains(resultText(r), "insufficient permissions")) {
			t.Errorf("scopes %v: run_sql = %q (error %v, ran %v), want insufficient permissions", c.scopes, resultText(r), r.IsError, ran)
		}
	}
}

// cookieClient sends the token in the access_token cookie and, as a proxy
// with basic authentication in front of the OS would, its own Authorization
// header.
type cookieClient struct {
	token string
	next  http.RoundTripper
}

func (c cookieClient) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.AddCookie(&http.Cookie{Name: "access_token", Value: c.token})
	r.Header.Set("Authorization", "Basic cHJveHk6cGFzcw==")
	return c.next.RoundTrip(r)
}

// A request the OS authenticated by cookie is served whatever Authorization
// header it also carries (the OS did not read it): the SDK's bearer check
// used to answer 401 to a header that is not a bearer token.
func TestAuth_CookieAuthenticatedRequestWithOtherAuthorizationHeader(t *testing.T) {
	h := newHarness(t, harnessConfig{cookie: true})
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	hc := &http.Client{Transport: cookieClient{token: token(t, "alice", time.Now().Add(time.Hour)), next: http.DefaultTransport}}
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("a cookie-authenticated client was refused: %v", err)
	}
	defer cs.Close()
	if r := callTool(t, cs, "get_sessions", nil); r.IsError {
		t.Fatalf("get_sessions: %q", resultText(r))
	}
}

// A caller without the scope to run agents learns nothing of which agents
// exist: an unknown agent id is refused as a known one is, as the HTTP
// routes check the scope before looking for the agent. The run tools used
// to answer "not found" for an unknown id and "insufficient permissions"
// for a served one.
func TestRunTools_ScopeCheckedBeforeTheTargetIsLookedUp(t *testing.T) {
	h := newHarness(t, harnessConfig{authz: true})
	cs := h.mustConnect(t, token(t, "alice", time.Now().Add(time.Hour), "sessions:read"))
	for name, args := range map[string]map[string]any{"run_agent": {"message": "x"}, "cancel_run": {"run_id": "r1"}, "continue_run": {"run_id": "r1"}} {
		for _, id := range []string{"echo", "no-such-agent"} {
			args["agent_id"] = id
			r := callTool(t, cs, name, args)
			if !r.IsError || !strings.Contains(resultText(r), "insufficient permissions") {
				t.Errorf("%s(agent_id %s) = %q (error %v), want insufficient permissions", name, id, resultText(r), r.IsError)
			}
		}
	}
	// With the scope, an unknown agent is not found.
	runner := h.mustConnect(t, token(t, "alice", time.Now().Add(time.Hour), "agents:run"))
	if r := callTool(t, runner, "run_agent", map[string]any{"agent_id": "no-such-agent", "message": "x"}); !r.IsError || !strings.Contains(resultText(r), "not found") {
		t.Errorf("run_agent(unknown) with agents:run = %q, want not found", resultText(r))
	}
}
