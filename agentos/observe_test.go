package agentos

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/trace"
)

// TestTelemetry_ContinuesTraceparent sends a W3C traceparent: the server
// span joins that trace under the caller's span, the run's span is its
// child, and the run's model span is the run span's child.
func TestTelemetry_ContinuesTraceparent(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	f := newFixtureWith(t, Config{Telemetry: Telemetry{TracerProvider: tp}}, func(f *fixture, _ *agent.Agent, cfg *Config) {
		c := agent.Config{ID: "traced", Model: scripted.Reply("hello"), DB: f.db}
		trace.Instrument(&c, tp)
		a, err := agent.New(c)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Agents = append(cfg.Agents, a)
	})
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	res := do(t, "POST", f.url+"/agents/traced/runs", strings.NewReader("message=hi&stream=false"), map[string]string{
		"Content-Type": "application/x-www-form-urlencoded", "traceparent": "00-" + traceID + "-" + parentID + "-01"})
	if res.status != 200 {
		t.Fatalf("%d %s", res.status, res.body)
	}
	var server, runSpan, chat *tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "POST /agents/{agent_id}/runs":
			server = &s
		case "invoke_agent traced":
			runSpan = &s
		case "chat scripted":
			chat = &s
		}
	}
	if server == nil || runSpan == nil || chat == nil {
		t.Fatalf("spans %v", exp.GetSpans())
	}
	if server.SpanContext.TraceID().String() != traceID || server.Parent.SpanID().String() != parentID || !server.Parent.IsRemote() {
		t.Errorf("server span %s parent %s", server.SpanContext.TraceID(), server.Parent.SpanID())
	}
	if runSpan.SpanContext.TraceID().String() != traceID || runSpan.Parent.SpanID() != server.SpanContext.SpanID() {
		t.Errorf("run span is not under the server span")
	}
	if chat.SpanContext.TraceID().String() != traceID || chat.Parent.SpanID() != runSpan.SpanContext.SpanID() {
		t.Errorf("model span is not under the run span")
	}
	// Without a provider the router has no tracing layer at all.
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if s.observe() != nil {
		t.Error("observe middleware installed with telemetry off")
	}
}

// The server takes any token as a method, and the request span was named
// after it: a client could make a span name (and an http.request.method
// value) per request. A method OpenTelemetry does not list is "_OTHER",
// the span "HTTP", the client's word in http.request.method_original.
func TestTelemetry_UnknownMethodIsOther(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	f := newFixtureWith(t, Config{Telemetry: Telemetry{TracerProvider: tp}}, nil)
	for _, method := range []string{"FROBNICATE", "GET"} {
		res := do(t, method, f.url+"/health", nil, nil)
		if method == "GET" && res.status != 200 {
			t.Fatalf("GET /health: %d %s", res.status, res.body)
		}
	}
	got := map[string]map[attribute.Key]string{}
	for _, s := range exp.GetSpans() {
		if s.SpanKind == oteltrace.SpanKindServer {
			got[s.Name] = spanAttrs(s)
		}
	}
	other, ok := got["HTTP"]
	if !ok {
		other, ok = got["HTTP /health"]
	}
	if !ok || other["http.request.method"] != "_OTHER" || other["http.request.method_original"] != "FROBNICATE" {
		t.Errorf("unknown method's span: %v", got)
	}
	for name := range got {
		if strings.Contains(name, "FROBNICATE") {
			t.Errorf("span named after the client's method: %q", name)
		}
	}
	if get := got["GET /health"]; get["http.request.method"] != "GET" || get["http.request.method_original"] != "" {
		t.Errorf("GET's span: %v", got)
	}
}
