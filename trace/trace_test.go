package trace_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/trace"
)

func recorder() (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	return sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), exp
}

func calcConfig(t testing.TB) agent.Config {
	t.Helper()
	mul, err := tool.Func(tool.FuncConfig{Name: "multiply", Description: "multiplies"},
		func(_ context.Context, in struct {
			A int `json:"a"`
			B int `json:"b"`
		}) (int, error) {
			return in.A * in.B, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	m := scripted.MustNew(scripted.Config{ID: "calc-model", Provider: "Scripted", Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "multiply", Args: map[string]any{"a": 6, "b": 7}}}},
		{Content: "42"},
	}})
	return agent.Config{ID: "calc", Name: "Calculator", Model: m, Tools: []tool.Tool{mul}}
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		out[kv.Key] = kv.Value
	}
	return out
}

func TestSpans_RunModelAndToolWithGenAIAttributes(t *testing.T) {
	t.Parallel()
	tp, exp := recorder()
	cfg := calcConfig(t)
	trace.Instrument(&cfg, tp)
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out, err := trace.Runner(a, tp).Run(context.Background(), run.TextInput("6*7?"), agent.WithSessionID("s1"), agent.WithUserID("u1"))
	if err != nil || out.ContentString() != "42" {
		t.Fatalf("%v %v", out, err)
	}
	spans := exp.GetSpans()
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
	}
	root, chats, tools := byName["invoke_agent Calculator"], byName["chat calc-model"], byName["execute_tool multiply"]
	if len(root) != 1 || len(chats) != 2 || len(tools) != 1 {
		t.Fatalf("spans: %v", names(spans))
	}
	r := root[0]
	for _, c := range append(chats, tools...) {
		if c.Parent.SpanID() != r.SpanContext.SpanID() || c.SpanContext.TraceID() != r.SpanContext.TraceID() {
			t.Errorf("%s is not a child of the run span", c.Name)
		}
	}
	ra := attrs(r)
	if ra[trace.AttrRunID].AsString() != out.RunID || ra[trace.AttrConversationID].AsString() != "s1" || ra[trace.AttrRunStatus].AsString() != "COMPLETED" ||
		ra[trace.AttrAgentID].AsString() != "calc" || ra[trace.AttrOperation].AsString() != "invoke_agent" || ra[trace.AttrUserID].AsString() != "u1" {
		t.Errorf("run attributes %v", ra)
	}
	ca := attrs(chats[0])
	if ca[trace.AttrOperation].AsString() != "chat" || ca[trace.AttrRequestModel].AsString() != "calc-model" ||
		ca[trace.AttrProvider].AsString() != "Scripted" || len(ca[trace.AttrFinishReasons].AsStringSlice()) != 1 {
		t.Errorf("chat attributes %v", ca)
	}
	if _, ok := ca[trace.AttrInputTokens]; !ok {
		t.Errorf("chat span lacks token usage: %v", ca)
	}
	ta := attrs(tools[0])
	if ta[trace.AttrToolName].AsString() != "multiply" || ta[trace.AttrToolCallID].AsString() == "" || ta[trace.AttrOperation].AsString() != "execute_tool" {
		t.Errorf("tool attributes %v", ta)
	}
}

func TestSpans_StreamEndsTheRunSpan(t *testing.T) {
	t.Parallel()
	tp, exp := recorder()
	cfg := calcConfig(t)
	trace.Instrument(&cfg, tp)
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range trace.Runner(a, tp).Stream(context.Background(), run.TextInput("6*7?")) {
		if err != nil {
			t.Fatal(err)
		}
	}
	var runSpans int
	for _, s := range exp.GetSpans() {
		if s.Name == "invoke_agent Calculator" {
			runSpans++
			if attrs(s)[trace.AttrRunStatus].AsString() != "COMPLETED" {
				t.Errorf("stream run span %v", attrs(s))
			}
		}
	}
	if runSpans != 1 {
		t.Errorf("run spans %d: %v", runSpans, names(exp.GetSpans()))
	}
}

func TestSpans_ToolErrorMarksTheSpan(t *testing.T) {
	t.Parallel()
	tp, exp := recorder()
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: "missing_tool"}}}, {Content: "done"}}})
	cfg := agent.Config{Model: m}
	trace.Instrument(&cfg, tp)
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), run.TextInput("x")); err != nil {
		t.Fatal(err)
	}
	for _, s := range exp.GetSpans() {
		if s.Name == "execute_tool missing_tool" {
			if s.Status.Code.String() != "Error" {
				t.Errorf("status %v", s.Status)
			}
			return
		}
	}
	t.Errorf("no tool span: %v", names(exp.GetSpans()))
}

func TestInstrument_OffChangesNothing(t *testing.T) {
	t.Parallel()
	cfg := calcConfig(t)
	before := cfg.Model
	trace.Instrument(&cfg, nil)
	if cfg.Model != before || len(cfg.ToolHooks) != 0 {
		t.Errorf("a nil provider wrapped the config")
	}
	var r agent.Runner
	if trace.Runner(r, nil) != nil || trace.Model(before, nil) != before {
		t.Errorf("a nil provider wrapped a runner or a model")
	}
}

func TestEnabled_StandardVariables(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		on   bool
		fail bool
	}{
		{env: nil},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "x"}},
		{env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, fail: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_ENDPOINT": "x"}, fail: true},
	} {
		on, err := trace.Enabled(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
		if on != c.on || (err != nil) != c.fail {
			t.Errorf("%v: on %v err %v", c.env, on, err)
		}
	}
}

func names(spans tracetest.SpanStubs) []string {
	out := make([]string, len(spans))
	for i, s := range spans {
		out[i] = s.Name
	}
	return out
}

var _ model.Model = trace.Model(scripted.Reply("x"), sdktrace.NewTracerProvider())

// A streamed run its consumer stops reading (a client gone) ends its span
// with the status the run is stored with (CANCELLED), not none.
func TestSpans_StreamStoppedByItsConsumerEndsCancelled(t *testing.T) {
	t.Parallel()
	tp, exp := recorder()
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: scripted.Reply("hi")})
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range trace.Runner(a, tp).Stream(context.Background(), run.TextInput("x")) {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	for _, s := range exp.GetSpans() {
		if s.Name == "invoke_agent Echo" {
			if got := attrs(s)[trace.AttrRunStatus].AsString(); got != string(run.StatusCancelled) {
				t.Errorf("run span status %q, want %s", got, run.StatusCancelled)
			}
			return
		}
	}
	t.Fatalf("no run span: %v", names(exp.GetSpans()))
}

// A team's stream carries its member's run's events: a team stream
// stopped after its member's RunCompleted ends the team's span CANCELLED
// (as the team run is stored), not COMPLETED with the member's answer.
func TestSpans_TeamStreamEndsWithTheTeamRunsOwnStatus(t *testing.T) {
	t.Parallel()
	tp, exp := recorder()
	member, err := agent.New(agent.Config{ID: "a", Name: "A", Model: scripted.Reply("answer a")})
	if err != nil {
		t.Fatal(err)
	}
	tm, err := team.New(team.Config{ID: "crew", Name: "Crew", Members: []*agent.Agent{member}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: team.ToolDelegate, Args: map[string]any{"member_id": "a", "task": "t"}}}}, {Content: "done"}}})})
	if err != nil {
		t.Fatal(err)
	}
	var teamRunID string
	for ev, err := range trace.Runner(tm, tp).Stream(context.Background(), run.TextInput("x")) {
		if err != nil {
			t.Fatal(err)
		}
		if teamRunID == "" {
			teamRunID = ev.RunID
		}
		if ev.Event == run.EventRunCompleted && ev.RunID != teamRunID {
			break
		}
	}
	for _, s := range exp.GetSpans() {
		if attrs(s)[trace.AttrRunID].AsString() == teamRunID {
			if got := attrs(s)[trace.AttrRunStatus].AsString(); got != string(run.StatusCancelled) {
				t.Errorf("team run span status %q, want %s", got, run.StatusCancelled)
			}
			return
		}
	}
	t.Fatalf("no span of the team run: %v", names(exp.GetSpans()))
}

// Instrument wrapped FallbackModels in the caller's own slice (a list two
// configurations share got its models wrapped twice: two chat spans for
// one call) and left FallbackConfig's models untraced (a run that fell back
// to one showed no chat span for the call that answered).
func TestInstrument_FallbacksAreTracedOnceInNewLists(t *testing.T) {
	t.Parallel()
	down := func() model.Model {
		return scripted.MustNew(scripted.Config{ID: "primary", Turns: []scripted.Turn{{Error: "down", ErrorKind: "server"}}})
	}
	answers := func(id string) model.Model {
		return scripted.MustNew(scripted.Config{ID: id, Turns: []scripted.Turn{{Content: "ok"}}})
	}
	chats := func(exp *tracetest.InMemoryExporter, name string) int {
		n := 0
		for _, s := range exp.GetSpans() {
			if s.Name == name {
				n++
			}
		}
		return n
	}
	runOnce := func(cfg agent.Config) {
		t.Helper()
		a, err := agent.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := a.Run(context.Background(), run.TextInput("x")); err != nil || out.Status != run.StatusCompleted {
			t.Fatalf("run: %v (%+v)", err, out)
		}
	}

	tp, exp := recorder()
	fallback := answers("fb")
	shared := []model.Model{fallback}
	first := agent.Config{Model: down(), FallbackModels: shared}
	second := agent.Config{Model: down(), FallbackModels: shared}
	trace.Instrument(&first, tp)
	trace.Instrument(&second, tp)
	if shared[0] != fallback {
		t.Error("Instrument changed the caller's FallbackModels")
	}
	runOnce(second)
	if n := chats(exp, "chat fb"); n != 1 {
		t.Errorf("%d chat spans for one fallback call: %v", n, names(exp.GetSpans()))
	}

	tp, exp = recorder()
	onError := []model.Model{answers("fb-error")}
	cfg := agent.Config{Model: down(), FallbackConfig: &model.FallbackConfig{OnError: onError}}
	orig := cfg.FallbackConfig
	trace.Instrument(&cfg, tp)
	if orig.OnError[0] != onError[0] || cfg.FallbackConfig == orig {
		t.Error("Instrument changed the caller's FallbackConfig")
	}
	runOnce(cfg)
	if n := chats(exp, "chat fb-error"); n != 1 {
		t.Errorf("%d chat spans for the FallbackConfig model's call, want 1: %v", n, names(exp.GetSpans()))
	}
}
