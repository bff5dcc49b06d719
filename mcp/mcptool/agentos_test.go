package mcptool_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos"
	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/mcp/mcptool"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// An agent uses another AgentOS's /mcp (authenticated by its security key)
// as a toolkit: run_agent inside the agent's run reaches the remote agent.
func TestToolkit_AgainstAgentOSOwnMCP(t *testing.T) {
	const key = "0123456789abcdef0123456789abcdef"
	remote, err := agent.New(agent.Config{ID: "expert", Model: scripted.Reply("42, said the expert")})
	if err != nil {
		t.Fatal(err)
	}
	authn, err := auth.NewAuthenticator(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := agentos.New(agentos.Config{Agents: []*agent.Agent{remote}, Auth: agentos.Auth{Authenticator: authn},
		MCP: agentos.MCP{Enabled: true}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	if _, err := newKit(t, mcptool.Config{URL: ts.URL + "/mcp"}).Tools(context.Background()); err == nil ||
		!strings.Contains(err.Error(), "Unauthorized") && !strings.Contains(err.Error(), "401") {
		t.Fatalf("without the key: %v", err)
	}
	kit := newKit(t, mcptool.Config{Name: "os", URL: ts.URL + "/mcp", BearerToken: key, Include: []string{"run_agent", "get_agentos_config"}})
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "run_agent", Args: map[string]any{"agent_id": "expert", "message": "the answer?"}}}},
		{Content: "the expert answered"},
	}})
	a, err := agent.New(agent.Config{Model: m, ToolProviders: []agent.ToolProvider{kit}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	out, err := a.Run(context.Background(), run.Input{InputContent: "ask the expert"})
	if err != nil || out.Status != run.StatusCompleted || len(out.Tools) != 1 {
		t.Fatalf("run: %v %+v", err, out)
	}
	if te := out.Tools[0]; te.ToolCallError || te.Result != "42, said the expert" {
		t.Fatalf("run_agent over MCP = %q (error %v)", te.Result, te.ToolCallError)
	}
}
