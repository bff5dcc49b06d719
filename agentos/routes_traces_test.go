package agentos

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/trace"
)

type traceFixture struct {
	url    string
	db     *db.DB
	tp     *sdktrace.TracerProvider
	hdrs   map[string]map[string]string
	tokens map[string]string
	// exported are the spans an exporter (OTLP in production) receives.
	exported *tracetest.InMemoryExporter
}

// newTraceFixture serves a "calc" agent (a tool call, then an answer) on a
// SQLite file with user isolation, JWT callers alice, bob and an admin, and
// tracing stored in the same database.
func newTraceFixture(t *testing.T) traceFixture { return newTraceFixtureWith(t, trace.Content{}) }

// newTraceFixtureWith is newTraceFixture with a content policy, the MCP
// endpoint on, and an in-memory exporter beside the store.
func newTraceFixtureWith(t *testing.T, content trace.Content) traceFixture {
	t.Helper()
	d := testdbs.SQLite(t)
	st, err := trace.NewStore(trace.StoreConfig{DB: d, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	exp := tracetest.NewInMemoryExporter()
	sdk := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(st), sdktrace.WithSyncer(exp))
	tp := trace.WithContent(sdk, content)
	t.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	mul := tool.MustFunc(tool.FuncConfig{Name: "multiply", Description: "multiplies"},
		func(_ context.Context, in struct{ A, B int }) (int, error) { return in.A * in.B, nil })
	m := scripted.MustNew(scripted.Config{ID: "calc-model", Provider: "Scripted", Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "multiply", Args: map[string]any{"A": 6, "B": 7}}}}, {Content: "42"}}})
	cfg := agent.Config{ID: "calc", Name: "Calculator", Model: m, DB: d, Tools: []tool.Tool{mul}}
	trace.Instrument(&cfg, tp)
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}, UserIsolation: true, Auth: Auth{Authenticator: jwtAuthenticator(t, "")},
		Telemetry: Telemetry{TracerProvider: tp}, MCP: MCP{Enabled: true}}, nil)
	f := traceFixture{url: ts.URL, db: d, tp: sdk, exported: exp, hdrs: map[string]map[string]string{}, tokens: map[string]string{
		"alice": hsToken(t, jwt.MapClaims{"sub": "alice"}),
		"bob":   hsToken(t, jwt.MapClaims{"sub": "bob"}),
		"admin": hsToken(t, jwt.MapClaims{"sub": "root", "scopes": []string{auth.AdminScope}}),
	}}
	for u, tok := range f.tokens {
		f.hdrs[u] = bearer(tok)
	}
	return f
}

// runAs runs calc over HTTP as user and returns the run id, once its spans
// are stored.
func (f traceFixture) runAs(t *testing.T, user string) string {
	t.Helper()
	res := postForm(t, f.url+"/agents/calc/runs", map[string]string{"message": "6*7?", "stream": "false", "session_id": "s-" + user}, f.hdrs[user])
	if res.status != http.StatusOK {
		t.Fatalf("run as %s: %d %s", user, res.status, res.body)
	}
	var out struct {
		RunID string `json:"run_id"`
	}
	if err := json.Unmarshal([]byte(res.body), &out); err != nil {
		t.Fatal(err)
	}
	if err := f.tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return out.RunID
}

// TestTraceRoutes_RunIsListedWithItsTree runs the agent through the server
// and reads its trace back through every /traces route in AgentOS's shapes.
func TestTraceRoutes_RunIsListedWithItsTree(t *testing.T) {
	t.Parallel()
	f := newTraceFixture(t)
	runID := f.runAs(t, "alice")
	alice := f.hdrs["alice"]
	page := decode[paginated[traceSummary]](t, get(t, f.url+"/traces?agent_id=calc", alice))
	if page.Meta.TotalCount != 1 || len(page.Data) != 1 {
		t.Fatalf("list %+v", page)
	}
	s := page.Data[0]
	if s.Name != "invoke_agent Calculator" || s.Status != "OK" || s.TotalSpans != 4 || s.ErrorCount != 0 || *s.RunID != runID ||
		*s.SessionID != "s-alice" || *s.UserID != "alice" || *s.AgentID != "calc" || s.TeamID != nil || !strings.HasSuffix(s.Duration, "ms") {
		t.Fatalf("summary %+v", s)
	}
	res := get(t, f.url+"/traces/"+s.TraceID, alice)
	if res.status != http.StatusOK {
		t.Fatalf("get: %d %s", res.status, res.body)
	}
	var detail map[string]any
	if err := json.Unmarshal([]byte(res.body), &detail); err != nil {
		t.Fatal(err)
	}
	tree, _ := detail["tree"].([]any)
	if len(tree) != 1 {
		t.Fatalf("tree %s", res.body)
	}
	root := tree[0].(map[string]any)
	kids, _ := root["spans"].([]any)
	var types []string
	for _, k := range kids {
		types = append(types, k.(map[string]any)["type"].(string))
	}
	if root["type"] != "AGENT" || strings.Join(types, ",") != "LLM,TOOL,LLM" {
		t.Fatalf("root %v children %v", root["type"], types)
	}
	if md, _ := root["metadata"].(map[string]any); md["total_input_tokens"] == nil {
		t.Errorf("root metadata %v", root["metadata"])
	}
	llm := kids[0].(map[string]any)
	if md, _ := llm["metadata"].(map[string]any); md["model"] != "calc-model" {
		t.Errorf("llm node %v", llm)
	}
	tool := kids[1].(map[string]any)
	one := decode[map[string]any](t, get(t, f.url+"/traces/"+s.TraceID+"?span_id="+tool["id"].(string), alice))
	if one["type"] != "TOOL" || one["metadata"].(map[string]any)["tool_name"] != "multiply" {
		t.Errorf("span %v", one)
	}
	if res := get(t, f.url+"/traces/"+s.TraceID+"?span_id=nope", alice); res.status != http.StatusNotFound {
		t.Errorf("missing span: %d", res.status)
	}
	stats := decode[paginated[traceSessionStatsView]](t, get(t, f.url+"/trace_session_stats", alice))
	if stats.Meta.TotalCount != 1 || stats.Data[0].SessionID != "s-alice" || stats.Data[0].TotalTraces != 1 {
		t.Errorf("stats %+v", stats)
	}
	found := decode[paginated[traceDetail]](t, do(t, "POST", f.url+"/traces/search",
		strings.NewReader(`{"filter":{"op":"AND","conditions":[{"op":"EQ","key":"status","value":"OK"},{"op":"CONTAINS","key":"agent_id","value":"CAL"}]}}`),
		withJSON(alice)))
	if found.Meta.TotalCount != 1 || len(found.Data) != 1 || len(found.Data[0].Tree) != 1 {
		t.Errorf("search %+v", found)
	}
	bySession := do(t, "POST", f.url+"/traces/search", strings.NewReader(`{"group_by":"session"}`), withJSON(alice))
	if bySession.status != http.StatusOK || !strings.Contains(bySession.body, `"session_id":"s-alice"`) {
		t.Errorf("search by session: %d %s", bySession.status, bySession.body)
	}
	for body, want := range map[string]int{`{"filter":{"op":"EQ","key":"secret","value":1}}`: 400, `{"group_by":"user"}`: 422,
		`{"limit":101}`: 422, `{"filter":{"op":"AND","conditions":[{"op":"NOT"}]}}`: 400, `not json`: 422} {
		if res := do(t, "POST", f.url+"/traces/search", strings.NewReader(body), withJSON(alice)); res.status != want {
			t.Errorf("search %s: %d %s, want %d", body, res.status, res.body, want)
		}
	}
	if res := get(t, f.url+"/traces?start_time=yesterday", alice); res.status != http.StatusBadRequest {
		t.Errorf("bad start_time: %d", res.status)
	}
	if res := get(t, f.url+"/traces/filter-schema", alice); res.status != http.StatusOK || !strings.Contains(res.body, `"duration_ms"`) {
		t.Errorf("filter schema: %d %s", res.status, res.body)
	}
}

func withJSON(h map[string]string) map[string]string {
	out := map[string]string{"Content-Type": "application/json"}
	for k, v := range h {
		out[k] = v
	}
	return out
}

// TestTraceRoutes_IsolationMatrix: alice's trace (from a real run), bob's
// and an unowned one. Each user reaches only their own through every route;
// another user's or an unowned trace is 404 (never 403) and absent from
// lists, stats and searches, whatever user_id or filter is asked for; the
// admin sees all; no token is 401.
func TestTraceRoutes_IsolationMatrix(t *testing.T) {
	t.Parallel()
	f := newTraceFixture(t)
	f.runAs(t, "alice")
	f.runAs(t, "bob")
	now := time.Now()
	if err := f.db.WriteTraces(context.Background(), []db.Trace{{TraceID: "unowned-trace", Name: "x", Status: "OK", StartTime: now, EndTime: now,
		SessionID: "s-unowned", AgentID: "calc", CreatedAt: now}}, nil); err != nil {
		t.Fatal(err)
	}
	all := decode[paginated[traceSummary]](t, get(t, f.url+"/traces", f.hdrs["admin"]))
	if all.Meta.TotalCount != 3 {
		t.Fatalf("admin sees %d traces", all.Meta.TotalCount)
	}
	ids := map[string]string{} // user → trace id
	for _, s := range all.Data {
		u := "unowned"
		if s.UserID != nil {
			u = *s.UserID
		}
		ids[u] = s.TraceID
	}
	for _, caller := range []string{"alice", "bob"} {
		other := map[string]string{"alice": "bob", "bob": "alice"}[caller]
		h := f.hdrs[caller]
		for _, path := range []string{"/traces", "/traces?user_id=" + other, "/trace_session_stats", "/trace_session_stats?user_id=" + other} {
			res := get(t, f.url+path, h)
			if res.status != http.StatusOK || !strings.Contains(res.body, `"total_count":1`) || strings.Contains(res.body, other) ||
				strings.Contains(res.body, "unowned") {
				t.Errorf("%s GET %s: %d %s", caller, path, res.status, res.body)
			}
		}
		for _, body := range []string{`{}`, `{"filter":{"op":"EQ","key":"user_id","value":"` + other + `"}}`, `{"group_by":"session"}`,
			`{"filter":{"op":"OR","conditions":[{"op":"EQ","key":"user_id","value":"` + other + `"},{"op":"NEQ","key":"user_id","value":"x"}]}}`} {
			res := do(t, "POST", f.url+"/traces/search", strings.NewReader(body), withJSON(h))
			if res.status != http.StatusOK || strings.Contains(res.body, other) || strings.Contains(res.body, "unowned") ||
				strings.Contains(res.body, `"total_count":2`) {
				t.Errorf("%s search %s: %d %s", caller, body, res.status, res.body)
			}
		}
		if res := get(t, f.url+"/traces/"+ids[caller], h); res.status != http.StatusOK {
			t.Errorf("%s's own trace: %d", caller, res.status)
		}
		for _, p := range []string{"/traces/" + ids[other], "/traces/" + ids["unowned"], "/traces/" + ids[other] + "?span_id=x",
			"/traces/x?run_id=" + ids[other], "/traces/missing"} {
			if res := get(t, f.url+p, h); res.status != http.StatusNotFound {
				t.Errorf("%s GET %s: %d %s", caller, p, res.status, res.body)
			}
		}
	}
	for _, id := range ids {
		if res := get(t, f.url+"/traces/"+id, f.hdrs["admin"]); res.status != http.StatusOK {
			t.Errorf("admin GET trace %s: %d", id, res.status)
		}
	}
	for _, p := range []string{"/traces", "/traces/" + ids["alice"], "/trace_session_stats"} {
		if res := get(t, f.url+p, nil); res.status != http.StatusUnauthorized {
			t.Errorf("no token GET %s: %d", p, res.status)
		}
	}
}
