package agentos

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
)

// The isolation matrix's rows for the /traces routes: alice's trace, bob's
// and an unowned one (no user: invisible to every scoped caller), stored
// in the fixture's in-memory database.

var (
	traceAliceMarkers = []string{"tr-alice"}
	traceBobMarkers   = []string{"tr-bob", "tr-unowned"}
	traceMissingTwins = []string{"tr-alice", "tr-missing", "sp-alice", "sp-missing"}
)

// seedTraces stores a trace (a root run span and a tool span) for alice,
// bob and no one, each in the user's session.
func seedTraces(t *testing.T, d *db.DB) {
	t.Helper()
	start := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	for i, user := range []string{"alice", "bob", ""} {
		name := user
		if name == "" {
			name = "unowned"
		}
		id, at := "tr-"+name, start.Add(time.Duration(i)*time.Minute)
		root, _ := json.Marshal(map[string]any{"openinference.span.kind": "AGENT", "agno.run.id": id + "-run", "session.id": "s-" + name,
			"user.id": user, "input.value": "hello from " + name})
		tool, _ := json.Marshal(map[string]any{"openinference.span.kind": "TOOL", "tool.name": "lookup", "output.value": id + " result"})
		tr := db.Trace{TraceID: id, Name: "invoke_agent Echo", Status: "OK", StartTime: at, EndTime: at.Add(time.Second), DurationMS: 1000,
			RunID: id + "-run", SessionID: "s-" + name, UserID: user, AgentID: "echo", CreatedAt: at}
		spans := []db.Span{
			{SpanID: "sp-" + name, TraceID: id, Name: tr.Name, SpanKind: "INTERNAL", StatusCode: "OK", StartTime: at, EndTime: at.Add(time.Second),
				DurationMS: 1000, Attributes: root, CreatedAt: at},
			{SpanID: "sp-" + name + "-tool", TraceID: id, ParentSpanID: "sp-" + name, Name: "execute_tool lookup", SpanKind: "INTERNAL",
				StatusCode: "OK", StartTime: at, EndTime: at.Add(time.Millisecond), Attributes: tool, CreatedAt: at},
		}
		if err := d.WriteTraces(context.Background(), []db.Trace{tr}, spans); err != nil {
			t.Fatal(err)
		}
	}
}

// tracesView renders the traces a scope sees, for the before/after check.
func tracesView(t *testing.T, d *db.DB, ctx context.Context, b *strings.Builder) {
	t.Helper()
	traces, _, err := d.ListTraces(ctx, db.TraceFilter{Limit: 1000, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range traces {
		fmt.Fprintf(b, "trace %s %s %s %d\n", tr.TraceID, tr.UserID, tr.Status, tr.TotalSpans)
	}
}

// traceMarkersIn names the alice trace a /traces read route shows.
func traceMarkersIn(path string) ([]string, bool) {
	switch {
	case strings.HasPrefix(path, "/traces"):
		return traceAliceMarkers, true
	case strings.HasPrefix(path, "/trace_session_stats"):
		return []string{"s-alice"}, true
	}
	return nil, false
}

func traceCases() []isoCase {
	// The unowned trace is invisible to a scoped caller, visible to an admin.
	unownedOnlyForAdmin := func(t *testing.T, _ fixture, caller string, res response) {
		t.Helper()
		if seen := strings.Contains(res.body, "unowned"); seen != (caller == admin) {
			t.Errorf("%s sees the unowned trace: %v (%s)", caller, seen, res.body)
		}
		if caller == admin && !strings.Contains(res.body, "bob") {
			t.Errorf("admin does not see bob's trace: %s", res.body)
		}
	}
	showsAlice := func(t *testing.T, _ fixture, caller string, res response) {
		t.Helper()
		if !strings.Contains(res.body, "tr-alice") {
			t.Errorf("%s does not find alice's trace: %s", caller, res.body)
		}
	}
	return []isoCase{
		{name: "list traces", method: "GET", path: "/traces", ok: 200, list: true, effect: unownedOnlyForAdmin},
		{name: "list traces of alice", method: "GET", path: "/traces?user_id=alice&agent_id=echo", ok: 200, list: true},
		{name: "list traces of alice's session", method: "GET", path: "/traces?session_id=s-alice", ok: 200, list: true},
		{name: "get trace", method: "GET", path: "/traces/tr-alice", ok: 200},
		{name: "get trace's span", method: "GET", path: "/traces/tr-alice?span_id=sp-alice", ok: 200},
		{name: "search traces", method: "POST", path: "/traces/search", body: `{}`, ok: 200, list: true, effect: unownedOnlyForAdmin},
		{name: "search traces of alice", method: "POST", path: "/traces/search", ok: 200, list: true, effect: showsAlice,
			body: `{"filter":{"op":"OR","conditions":[{"op":"EQ","key":"user_id","value":"alice"},{"op":"EQ","key":"trace_id","value":"tr-alice"}]}}`},
		{name: "search trace sessions", method: "POST", path: "/traces/search", body: `{"group_by":"session"}`, ok: 200, list: true,
			effect: unownedOnlyForAdmin},
		{name: "trace session stats", method: "GET", path: "/trace_session_stats", ok: 200, list: true, effect: unownedOnlyForAdmin},
		{name: "trace session stats of alice", method: "GET", path: "/trace_session_stats?user_id=alice", ok: 200, list: true},
	}
}
