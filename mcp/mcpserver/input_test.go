package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/agentryhq/agentry/db"
)

// Tool arguments are checked as the HTTP routes check a run form and a
// query: a run needs a message, and no text may hold a NUL (Postgres stores
// none: the model ran and then the run could not be saved, and a NUL in an
// id or filter was a server error) or an id be longer than 255 bytes.
func TestInput_RefusesWhatTheRoutesRefuse(t *testing.T) {
	d, _ := proxiedPostgres(t)
	h := newHarness(t, harnessConfig{db: d})
	cs := h.mustConnect(t, token(t, "alice", time.Now().Add(time.Hour)))
	long := strings.Repeat("s", 256)
	cases := []struct {
		tool string
		args map[string]any
	}{
		{"run_agent", map[string]any{"agent_id": "echo", "message": "a\x00b"}},
		{"run_agent", map[string]any{"agent_id": "echo", "message": ""}},
		{"run_agent", map[string]any{"agent_id": "echo", "message": " \n "}},
		{"run_agent", map[string]any{"agent_id": "echo", "message": "x", "session_id": "s\x00"}},
		{"run_agent", map[string]any{"agent_id": "echo", "message": "x", "session_id": long}},
		{"run_agent", map[string]any{"agent_id": "echo", "message": "x", "session_id": "s\n1"}},
		{"run_agent", map[string]any{"agent_id": "echo", "message": "x", "user_id": "u\x00"}},
		{"get_session_runs", map[string]any{"session_id": "s\x00"}},
		{"get_session_runs", map[string]any{"session_id": "s1", "run_id": long}},
		{"get_sessions", map[string]any{"session_name": "n\x00"}},
		{"get_sessions", map[string]any{"component_id": "c\x00"}},
		{"get_memories", map[string]any{"search_content": "t\x00"}},
		{"get_memories", map[string]any{"topics": []string{"ok", "t\x00"}}},
		{"cancel_run", map[string]any{"agent_id": "echo", "run_id": "r\x00"}},
		{"continue_run", map[string]any{"agent_id": "echo", "run_id": "r1", "requirements": []map[string]any{{"note": "n\x00"}}}},
	}
	for _, c := range cases {
		r := callTool(t, cs, c.tool, c.args)
		if !r.IsError || !strings.Contains(resultText(r), "invalid input") {
			t.Errorf("%s(%q) = %q (error %v), want invalid input", c.tool, c.args, resultText(r), r.IsError)
		}
	}
	rows, _, err := d.GetRuns(db.WithUserScope(context.Background(), "alice"), db.RunFilter{AgentID: "echo", Limit: 10, Page: 1})
	if err != nil || len(rows) != 0 {
		t.Errorf("runs stored for refused calls: %d (%v)", len(rows), err)
	}
	if logs := h.logs.String(); strings.Contains(logs, "mcp tool call failed") {
		t.Errorf("a refused argument was a server error: %s", logs)
	}
	// An escaped backslash before u0000 is text, not a NUL.
	if r := callTool(t, cs, "get_sessions", map[string]any{"session_name": `\u0000`}); r.IsError {
		t.Errorf(`get_sessions(session_name \u0000 as text): %q`, resultText(r))
	}
}

// FuzzCheckArguments: any bytes are checked without panicking, and
// arguments it lets through hold no NUL and no over-long or control-laden id.
func FuzzCheckArguments(f *testing.F) {
	for _, seed := range []string{``, `null`, `{}`, `[]`, `"x"`, `{"session_id":"s"}`, `{"message":"a\u0000b"}`,
		`{"topics":["a",{"b\u0000":1}]}`, `{"run_id":"r\n"}`, `{"session_id":5}`, `{"a":`, `\u0000`, `{"message":"\\u0000"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if checkArguments(raw) != nil {
			return
		}
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return
		}
		if holdsNUL(v) {
			t.Fatalf("accepted arguments with a NUL: %q", raw)
		}
		m, _ := v.(map[string]any)
		for _, name := range idArguments {
			if s, ok := m[name].(string); ok && (len(s) > db.MaxUserIDBytes || strings.ContainsFunc(s, unicode.IsControl)) {
				t.Fatalf("accepted %s %q", name, s)
			}
		}
	})
}

// holdsNUL reports whether a decoded JSON value holds a NUL in a string or a
// member name.
func holdsNUL(v any) bool {
	switch x := v.(type) {
	case string:
		return strings.IndexByte(x, 0) >= 0
	case []any:
		for _, e := range x {
			if holdsNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range x {
			if strings.IndexByte(k, 0) >= 0 || holdsNUL(e) {
				return true
			}
		}
	}
	return false
}
