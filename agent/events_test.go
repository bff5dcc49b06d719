package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

func TestStream_EventOrderForToolRun(t *testing.T) {
	t.Parallel()
	a := mustAgent(t, Config{Name: "Calc", Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "add", Args: map[string]any{"a": 1, "b": 2}}}},
		scripted.Turn{Content: "It is 3."},
	), Tools: []tool.Tool{addTool()}})
	evs := collect(t, a.Stream(context.Background(), run.TextInput("1+2")))
	want := []run.EventType{
		run.EventRunStarted,
		run.EventModelRequestStarted, run.EventModelRequestCompleted,
		run.EventToolCallStarted, run.EventToolCallCompleted,
		run.EventModelRequestStarted, run.EventRunContent, run.EventRunContent, run.EventRunContent, run.EventModelRequestCompleted,
		run.EventRunContentCompleted, run.EventRunCompleted,
	}
	got := names(evs)
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
}

func TestStream_EventsMarshalToWireShape(t *testing.T) {
	t.Parallel()
	a := mustAgent(t, Config{Name: "Calc", Model: script(t,
		scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: "add", Args: map[string]any{"a": 1, "b": 2}}}},
		scripted.Turn{Content: "It is 3."},
	), Tools: []tool.Tool{addTool()}, ReasoningModel: script(t, scripted.Turn{Reasoning: "add them"})})
	evs := collect(t, a.Stream(context.Background(), run.TextInput("1+2"), WithSessionID("s-1")))
	var runID string
	for _, ev := range evs {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m["event"] != string(ev.Event) {
			t.Fatalf("%s: event key %v", ev.Event, m["event"])
		}
		if _, ok := m["data"]; ok {
			t.Fatalf("%s: has a top-level data key", ev.Event)
		}
		if _, ok := m["created_at"].(float64); !ok {
			t.Fatalf("%s: created_at %v is not an integer", ev.Event, m["created_at"])
		}
		for _, k := range []string{"agent_id", "agent_name", "run_id", "session_id"} {
			if s, _ := m[k].(string); s == "" {
				t.Fatalf("%s: missing %s in %s", ev.Event, k, b)
			}
		}
		for k, v := range m {
			if v == nil {
				t.Fatalf("%s: null field %s", ev.Event, k)
			}
		}
		if runID == "" {
			runID = m["run_id"].(string)
		} else if m["run_id"] != runID {
			t.Fatalf("%s: run id changed", ev.Event)
		}
		switch ev.Event {
		case run.EventRunStarted:
			if m["model"] != "scripted" || m["model_provider"] != "Scripted" || m["session_id"] != "s-1" {
				t.Fatalf("RunStarted %s", b)
			}
		case run.EventRunContent:
			if m["content_type"] != "str" || m["content"] == "" {
				t.Fatalf("RunContent %s", b)
			}
		case run.EventToolCallCompleted:
			tl := m["tool"].(map[string]any)
			if tl["tool_name"] != "add" || tl["result"] != "3" || tl["tool_call_id"] == "" {
				t.Fatalf("ToolCallCompleted %s", b)
			}
		case run.EventRunCompleted:
			metrics, _ := m["metrics"].(map[string]any)
			if m["content"] != "It is 3." || metrics["total_tokens"] == nil || m["reasoning_content"] != "add them" {
				t.Fatalf("RunCompleted %s", b)
			}
		case run.EventModelRequestCompleted:
			// Agno's fields: the call's tokens and time to first token
			// (total_tokens and time_to_first_token were left out).
			ttft, _ := m["time_to_first_token"].(float64)
			if m["input_tokens"] == nil || m["output_tokens"] == nil || m["total_tokens"] == nil || ttft <= 0 {
				t.Fatalf("ModelRequestCompleted %s", b)
			}
		}
	}
}

func TestStream_StoreEventsKeepsNonDeltaEvents(t *testing.T) {
	t.Parallel()
	d := db.New("m", memory.New())
	a := mustAgent(t, Config{Model: scripted.Reply("one two three"), StoreEvents: true, DB: d})
	var runID string
	deltas := 0
	for ev, err := range a.Stream(context.Background(), run.TextInput("x")) {
		if err != nil {
			t.Fatal(err)
		}
		runID = ev.RunID
		if ev.Event == run.EventRunContent {
			deltas++
		}
	}
	if deltas == 0 {
		t.Fatal("the live stream carried no content deltas; the test needs some to filter")
	}
	row, err := d.GetRun(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := row.Output()
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Events) == 0 || out.Events[0].Event != run.EventRunStarted || out.Events[len(out.Events)-1].Event != run.EventRunCompleted {
		t.Fatalf("stored events %+v", out.Events)
	}
	for _, e := range out.Events {
		if e.Event == run.EventRunContent {
			t.Fatal("content deltas must not be stored")
		}
	}
}

func TestStream_BreakStopsTheRun(t *testing.T) {
	t.Parallel()
	d := db.New("m", memory.New())
	a := mustAgent(t, Config{Model: scripted.Reply("many words in this answer"), DB: d})
	var runID string
	for ev, err := range a.Stream(context.Background(), run.TextInput("x")) {
		if err != nil {
			t.Fatal(err)
		}
		runID = ev.RunID
		if ev.Event == run.EventRunContent {
			break
		}
	}
	row, err := d.GetRun(context.Background(), runID)
	if err != nil {
		t.Fatalf("run %q after break: %v", runID, err)
	}
	if row.Status != run.StatusCancelled {
		t.Fatalf("status after break = %s, want CANCELLED", row.Status)
	}
	if out, _ := row.Output(); out == nil || out.ContentString() == "many words in this answer" {
		t.Fatalf("a run stopped after its first delta must not hold the whole answer: %+v", out)
	}
}
