package mcpserver

import (
	"context"
	"errors"
	"strings"
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

// A configured tool named as an enabled built-in tool would replace it
// silently (the SDK keeps the last tool of a name): New refuses it, naming
// the tool; with the built-in's tag disabled the name is free.
func TestUserTools_NameOfABuiltinIsRefused(t *testing.T) {
	shadow := tool.MustFunc(tool.FuncConfig{Name: "get_sessions", Description: "Not the sessions."},
		func(context.Context, struct{}) (string, error) { return "shadowed", nil })
	_, err := New(Config{Options: Options{Tools: []tool.Tool{shadow}}})
	if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "get_sessions") {
		t.Fatalf("New with a tool named get_sessions = %v, want ErrConfig naming it", err)
	}
	if _, err := New(Config{Options: Options{Tools: []tool.Tool{shadow}, ExcludeTags: []string{TagSession}}}); err != nil {
		t.Fatalf("with the session tools disabled: %v", err)
	}
}

// A tool under human review (requires_confirmation, requires_user_input,
// external_execution) cannot be served: an MCP tool call has no pause to
// wait for the review, and the tool ran at once, as if no review had been
// configured (a shell with requires_confirmation ran every command sent).
func TestUserTools_ToolsUnderHumanReviewAreRefused(t *testing.T) {
	for _, review := range []tool.FuncConfig{
		{RequiresConfirmation: true}, {RequiresUserInput: true}, {ExternalExecution: true},
	} {
		cfg := review
		cfg.Name, cfg.Description = "run_shell_command", "Runs a command."
		sh := tool.MustFunc(cfg, func(context.Context, struct{}) (string, error) { return "done", nil })
		_, err := New(Config{Options: Options{Tools: []tool.Tool{sh}}})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "run_shell_command") {
			t.Errorf("%+v: New = %v, want ErrConfig naming the tool", review, err)
		}
	}
}
