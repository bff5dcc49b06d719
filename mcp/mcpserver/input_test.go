package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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

// allIDs is an input holding every id argument, two of them in an
// embedded struct as the run tools' inputs hold them.
type allIDs struct {
	SessionID   string `json:"session_id"`
	UserID      string `json:"user_id"`
	AgentID     string `json:"agent_id"`
	TeamID      string `json:"team_id"`
	WorkflowID  string `json:"workflow_id"`
	ComponentID string `json:"component_id"`
	embeddedIDs
	Topics []any `json:"topics"`
}

type embeddedIDs struct {
	RunID string `json:"run_id"`
	DBID  string `json:"db_id"`
}

// FuzzCheckArguments: any arguments the SDK decodes are checked without
// panicking, and arguments the check lets through hold no NUL and no
// over-long or control-laden id.
func FuzzCheckArguments(f *testing.F) {
	for _, seed := range []string{``, `null`, `{}`, `[]`, `"x"`, `{"session_id":"s"}`, `{"message":"a\u0000b"}`,
		`{"topics":["a",{"b\u0000":1}]}`, `{"run_id":"r\n"}`, `{"db_id":"d\n"}`, `{"session_id":5}`, `{"a":`, `\u0000`, `{"message":"\\u0000"}`} {
		f.Add([]byte(seed))
	}
	c := newArgumentCheck[allIDs]()
	if len(c.ids) != len(idArguments) {
		f.Fatalf("found %d id fields in allIDs, want %d", len(c.ids), len(idArguments))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			return // the SDK refuses arguments that are not an object
		}
		for k := range m {
			for _, name := range idArguments {
				if k != name && strings.EqualFold(k, name) {
					return // the SDK matches member names exactly; its schema refuses this one
				}
			}
		}
		var in allIDs
		if json.Unmarshal(raw, &in) != nil {
			return // the SDK's schema refuses an id that is not a string
		}
		if c.check(raw, &in) != nil {
			return
		}
		if holdsNUL(m) {
			t.Fatalf("accepted arguments with a NUL: %q", raw)
		}
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

// TestCheckedTool_DecodesArgumentsOnce: the SDK has decoded a built-in
// tool's arguments into its input when the handler runs; the argument check
// reads that input (and scans the raw text for NUL escapes) instead of
// decoding the arguments a second time.
func TestCheckedTool_DecodesArgumentsOnce(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	h := checked(s, "get_session_runs", func(context.Context, *mcp.CallToolRequest, sessionRunsIn) (*mcp.CallToolResult, any, error) {
		return nil, nil, nil
	})
	raw := json.RawMessage(`{"session_id":"s1","run_id":"r1","user_id":"alice","session_type":"agent","db_id":"d"}`)
	var in sessionRunsIn
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "get_session_runs", Arguments: raw}}
	ctx := context.Background()
	if allocs := testing.AllocsPerRun(100, func() { _, _, _ = h(ctx, req, in) }); allocs != 0 {
		t.Errorf("checking decoded arguments allocates %v times a call; want 0 (no second decode)", allocs)
	}
	// The check still refuses what it refused, on the decoded input.
	in.RunID = strings.Repeat("r", 256)
	if _, _, err := h(ctx, req, in); !errors.Is(err, ErrInvalidInput) || !strings.Contains(err.Error(), "run_id must be at most 255 bytes") {
		t.Errorf("an over-long run_id: %v; want invalid input naming run_id", err)
	}
}
