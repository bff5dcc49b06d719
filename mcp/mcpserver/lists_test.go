package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// The list tools bound a page as the HTTP routes do (limit 1..1000): a
// huge limit used to read a whole table into one answer, and a negative
// limit or page was silently replaced by the default.
func TestListTools_RefuseOutOfRangePaging(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	cs := h.mustConnect(t, token(t, "alice", time.Now().Add(time.Hour)))
	for _, name := range []string{"get_sessions", "get_memories"} {
		for _, args := range []map[string]any{{"limit": 1001}, {"limit": 1 << 40}, {"limit": -1}, {"page": -2}} {
			r := callTool(t, cs, name, args)
			if !r.IsError || !strings.Contains(resultText(r), "invalid input") {
				t.Errorf("%s(%v) = %q (error %v), want invalid input", name, args, resultText(r), r.IsError)
			}
		}
		for _, args := range []map[string]any{nil, {"limit": 1000}, {"limit": 1, "page": 3}} {
			if r := callTool(t, cs, name, args); r.IsError {
				t.Errorf("%s(%v): %q", name, args, resultText(r))
			}
		}
	}
}

// get_sessions shows a session state Python stored as written: a 64-bit id
// was rounded to the float64 next to it. (A number beyond float64's range
// is passed on as stored too, but the Go SDK's client cannot read it.)
func TestGetSessions_ShowsTheStateAsStored(t *testing.T) {
	h := newHarness(t, harnessConfig{})
	if _, err := h.db.UpsertSession(context.Background(), &db.Session{SessionID: "s1", SessionType: run.TypeAgent, AgentID: "echo",
		UserID: "alice", SessionData: json.RawMessage(`{"session_name":"Trip","session_state":{"id":9007199254740993,"n":1}}`)}); err != nil {
		t.Fatal(err)
	}
	cs := h.mustConnect(t, token(t, "alice", time.Now().Add(time.Hour)))
	r := callTool(t, cs, "get_sessions", nil)
	if r.IsError {
		t.Fatalf("get_sessions: %q", resultText(r))
	}
	for _, want := range []string{`"session_name":"Trip"`, `"id":9007199254740993`, `"n":1`} {
		if !strings.Contains(resultText(r), want) {
			t.Errorf("get_sessions = %s, want %s in it", resultText(r), want)
		}
	}
}
