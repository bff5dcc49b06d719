package mcpserver

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/tool"
)

// MCP's arguments are optional: a call to a configured tool that sends
// none (or null) is a call with no arguments, as for the built-in tools.
func TestUserTools_CallWithoutArguments(t *testing.T) {
	now := tool.MustFunc(tool.FuncConfig{Name: "current_time", Description: "The time."},
		func(context.Context, struct{}) (string, error) { return "noon", nil })
	h := newHarness(t, harnessConfig{options: Options{Tools: []tool.Tool{now}}})
	cs := h.mustConnect(t, token(t, "alice", time.Now().Add(time.Hour)))
	for _, args := range []map[string]any{nil, {}} {
		r := callTool(t, cs, "current_time", args)
		if r.IsError || resultText(r) != "noon" {
			t.Errorf("current_time(%v) = %q (error %v), want noon", args, resultText(r), r.IsError)
		}
	}
	// The built-in tools already took a call without arguments.
	if r := callTool(t, cs, "get_sessions", nil); r.IsError {
		t.Fatalf("get_sessions without arguments: %q", resultText(r))
	}
}
