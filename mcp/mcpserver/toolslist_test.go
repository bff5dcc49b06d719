package mcpserver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentryhq/agentry/tool"
)

// With authorization on, tools/list shows a caller the tools it may call,
// as get_agentos_config shows only the agents it may read: a configured
// tool (a shell, SQL) and the built-ins its scopes cannot pass are left
// out, and the answer is marked private so that no intermediary serves one
// caller's list to another. Every tool used to be listed to everyone.
func TestToolsList_ShowsTheCallersTools(t *testing.T) {
	sqlTool := tool.MustFunc(tool.FuncConfig{Name: "run_sql", Description: "Runs SQL."},
		func(context.Context, struct{}) (string, error) { return "", nil })
	clock := tool.MustFunc(tool.FuncConfig{Name: "current_time", Description: "The time."},
		func(context.Context, struct{}) (string, error) { return "noon", nil })
	opts := Options{Tools: []tool.Tool{sqlTool, clock}}
	all := []string{"cancel_run", "continue_run", "current_time", "get_agentos_config", "get_memories", "get_session_runs",
		"get_sessions", "run_agent", "run_sql", "run_team", "run_workflow"}
	hour := time.Now().Add(time.Hour)
	list := func(t *testing.T, h *harness, tok string) ([]string, string) {
		t.Helper()
		res, err := h.mustConnect(t, tok).ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		slices.Sort(names)
		return names, res.CacheScope
	}
	h := newHarness(t, harnessConfig{authz: true, options: opts})
	for _, c := range []struct {
		scopes []string
		want   []string
	}{
		{[]string{"agent_os:admin"}, all},
		// Every grant, not admin: a built-in tool mayCall does not know is hidden.
		{[]string{"*:*"}, all},
		{[]string{"sessions:read", "tools:current_time:run", "agents:echo:run"},
			[]string{"cancel_run", "continue_run", "current_time", "get_session_runs", "get_sessions", "run_agent"}},
		{[]string{"sessions:s1:read", "agents:other:run", "config:read"}, []string{"get_agentos_config", "get_session_runs"}},
		{[]string{"tools:run", "memories:*"}, []string{"current_time", "get_memories", "run_sql"}},
		{nil, nil},
	} {
		got, scope := list(t, h, token(t, "alice", hour, c.scopes...))
		if !slices.Equal(got, c.want) {
			t.Errorf("scopes %v: tools/list = %v, want %v", c.scopes, got, c.want)
		}
		if scope != "private" {
			t.Errorf("scopes %v: cache scope %q, want private", c.scopes, scope)
		}
	}
	// Without authorization every caller may call every tool, and sees them.
	open := newHarness(t, harnessConfig{options: opts})
	if got, _ := list(t, open, token(t, "alice", hour)); !slices.Equal(got, all) {
		t.Errorf("without authorization: tools/list = %v, want %v", got, all)
	}
}
