package trace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/trace"
)

// runCalc runs the calculator through tp (run, chat and tool spans) and
// returns the spans by name; streamed runs the agent's event stream.
func runCalc(t *testing.T, tp oteltrace.TracerProvider, exp *tracetest.InMemoryExporter, input string, streamed bool) map[string][]tracetest.SpanStub {
	t.Helper()
	cfg := calcConfig(t)
	trace.Instrument(&cfg, tp)
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runID := fmt.Sprintf("%s-%d", t.Name(), runSeq.Add(1))
	r := trace.KnownRunner(a, tp, trace.RunInfo{RunID: runID, SessionID: "s1", UserID: "u1"})
	if streamed {
		for _, err := range r.Stream(context.Background(), run.TextInput(input), agent.WithRunID(runID)) {
			if err != nil {
				t.Fatal(err)
			}
		}
	} else if out, err := r.Run(context.Background(), run.TextInput(input), agent.WithRunID(runID)); err != nil || out.ContentString() != "42" {
		t.Fatalf("%v %v", out, err)
	}
	by := map[string][]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		by[s.Name] = append(by[s.Name], s)
	}
	if len(by["invoke_agent Calculator"]) != 1 || len(by["chat calc-model"]) != 2 || len(by["execute_tool multiply"]) != 1 {
		t.Fatalf("spans: %v", names(exp.GetSpans()))
	}
	return by
}

var runSeq atomic.Int64

func value(s tracetest.SpanStub, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.AsString(), true
		}
	}
	return "", false
}

// TestContent_RecordedOnRunModelAndToolSpans: by default (as Agno) the run
// span carries the prompt and the answer, a chat span the messages sent and
// the model's answer, a tool span its arguments and result.
func TestContent_RecordedOnRunModelAndToolSpans(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		tp, exp := recorder()
		by := runCalc(t, tp, exp, "what is 6*7?", streamed)
		root := by["invoke_agent Calculator"][0]
		if in, _ := value(root, "input.value"); in != "what is 6*7?" {
			t.Errorf("streamed=%v: run input.value = %q", streamed, in)
		}
		if out, _ := value(root, "output.value"); out != "42" {
			t.Errorf("streamed=%v: run output.value = %q", streamed, out)
		}
		first, second := by["chat calc-model"][0], by["chat calc-model"][1]
		in, _ := value(first, "input.value")
		var msgs []map[string]any
		if err := json.Unmarshal([]byte(in), &msgs); err != nil || len(msgs) == 0 || msgs[len(msgs)-1]["content"] != "what is 6*7?" {
			t.Errorf("streamed=%v: first chat input.value = %s (%v)", streamed, in, err)
		}
		if mt, _ := value(first, "input.mime_type"); mt != "application/json" {
			t.Errorf("input.mime_type = %q", mt)
		}
		if out, _ := value(first, "output.value"); !strings.Contains(out, `"name":"multiply"`) {
			t.Errorf("streamed=%v: the tool-calling answer's output.value = %q", streamed, out)
		}
		if out, _ := value(second, "output.value"); out != "42" {
			t.Errorf("streamed=%v: the final answer's output.value = %q", streamed, out)
		}
		tool := by["execute_tool multiply"][0]
		if in, _ := value(tool, "input.value"); in != `{"a":6,"b":7}` {
			t.Errorf("tool input.value = %q", in)
		}
		if out, _ := value(tool, "output.value"); out != "42" {
			t.Errorf("tool output.value = %q", out)
		}
	}
}

// TestContent_TruncatedAtTheCap: a text longer than MaxBytes is cut on a
// UTF-8 boundary and says how long it was.
func TestContent_TruncatedAtTheCap(t *testing.T) {
	t.Parallel()
	sdk, exp := recorder()
	tp := trace.WithContent(sdk, trace.Content{MaxBytes: 10})
	input := strings.Repeat("é", 20) // 40 bytes
	by := runCalc(t, tp, exp, input, false)
	root := by["invoke_agent Calculator"][0]
	want := strings.Repeat("é", 5) + "…[truncated: 10 of 40 bytes]"
	if in, _ := value(root, "input.value"); in != want {
		t.Errorf("input.value = %q, want %q", in, want)
	}
	if out, _ := value(root, "output.value"); out != "42" {
		t.Errorf("a short answer is kept whole: %q", out)
	}
	for _, c := range by["chat calc-model"] {
		in, _ := value(c, "input.value")
		if !strings.HasSuffix(in, " bytes]") || len(in) > 10+len("…[truncated: 10 of 99999 bytes]") {
			t.Errorf("chat input.value is not capped: %q", in)
		}
	}
	odd := trace.WithContent(sdk, trace.Content{MaxBytes: 3})
	exp.Reset()
	by = runCalc(t, odd, exp, "ééé", false) // 6 bytes: 3 cuts inside the second é
	if in, _ := value(by["invoke_agent Calculator"][0], "input.value"); in != "é…[truncated: 2 of 6 bytes]" {
		t.Errorf("cut inside a rune: %q", in)
	}
}

// TestContent_AbsentWhenOmitted: with Omit no span carries text, so neither
// the stored traces nor an exporter get any.
func TestContent_AbsentWhenOmitted(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		sdk, exp := recorder()
		by := runCalc(t, trace.WithContent(sdk, trace.Content{Omit: true}), exp, "secret prompt", streamed)
		for name, spans := range by {
			for _, s := range spans {
				for _, kv := range s.Attributes {
					if strings.HasPrefix(string(kv.Key), "input.") || strings.HasPrefix(string(kv.Key), "output.") ||
						strings.Contains(kv.Value.String(), "secret") || kv.Value.String() == "42" {
						t.Errorf("streamed=%v: %s carries %s=%s", streamed, name, kv.Key, kv.Value.String())
					}
				}
			}
		}
		if len(by["invoke_agent Calculator"][0].Attributes) == 0 {
			t.Error("the run span lost its other attributes")
		}
	}
}

func TestContent_ValidateRefusesANegativeCap(t *testing.T) {
	t.Parallel()
	if err := (trace.Content{MaxBytes: -1}).Validate(); err == nil {
		t.Error("a negative cap is accepted")
	}
	if err := (trace.Content{}).Validate(); err != nil {
		t.Error(err)
	}
	if trace.WithContent(nil, trace.Content{}) != nil {
		t.Error("tracing off became on")
	}
}

// TestContent_ChatInputHasTheRequestHistoryFirst: a chat span's input is
// the whole conversation the model read, Request.History and then
// Messages, for Invoke and Stream alike.
func TestContent_ChatInputHasTheRequestHistoryFirst(t *testing.T) {
	t.Parallel()
	conv := []model.Message{
		{Role: model.RoleSystem, Content: "be brief"},
		{Role: model.RoleUser, Content: "first", FromHistory: true},
		{Role: model.RoleAssistant, Content: "noted", FromHistory: true},
		{Role: model.RoleUser, Content: "second"},
	}
	req := &model.Request{History: model.NewHistory(conv[:1], conv[1:3]), Messages: conv[3:]}
	for _, streamed := range []bool{false, true} {
		tp, exp := recorder()
		m := trace.Model(scripted.Reply("ok"), tp)
		if streamed {
			for _, err := range m.Stream(context.Background(), req) {
				if err != nil {
					t.Fatal(err)
				}
			}
		} else if _, err := m.Invoke(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		spans := exp.GetSpans()
		if len(spans) != 1 {
			t.Fatalf("spans: %v", names(spans))
		}
		in, _ := value(spans[0], "input.value")
		var msgs []model.Message
		if err := json.Unmarshal([]byte(in), &msgs); err != nil {
			t.Fatalf("streamed=%v: input.value %s: %v", streamed, in, err)
		}
		var got []string
		for _, m := range msgs {
			got = append(got, m.Content)
		}
		if fmt.Sprint(got) != "[be brief first noted second]" {
			t.Errorf("streamed=%v: chat input has %q, want the history then the new message", streamed, got)
		}
	}
}
