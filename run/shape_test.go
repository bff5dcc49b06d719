package run_test

import (
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// TestOutput_WritesAgnosCurrentShape: runs built in Go are stored the way
// Agno 3.0 writes and reads them.
func TestOutput_WritesAgnosCurrentShape(t *testing.T) {
	t.Parallel()
	yes := true
	tests := []struct {
		name string
		out  run.Output
		want string
	}{
		{"tool calls nested, OpenAI-shaped, with arguments a JSON string", run.Output{RunID: "r", AgentID: "a",
			Messages: []model.Message{{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "get_weather", Arguments: `{"city":"Paris"}`}}}}},
			`{"run_id":"r","agent_id":"a","messages":[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}]}`},
		{"agent input as a RunInput object, audio under audios", run.Output{RunID: "r", AgentID: "a",
			Input: &run.Input{InputContent: "hi", Audio: []run.Media{{URL: "https://x/a.mp3"}}}},
			`{"run_id":"r","agent_id":"a","input":{"input_content":"hi","audios":[{"url":"https://x/a.mp3"}]}}`},
		{"workflow input as the bare value", run.Output{RunID: "r", WorkflowID: "w", Input: &run.Input{InputContent: "write a post"}},
			`{"run_id":"r","workflow_id":"w","input":"write a post"}`},
		{"workflow metrics always carry steps", run.Output{RunID: "r", WorkflowID: "w", Metrics: &run.Metrics{Duration: 1.5, Steps: map[string]run.StepMetrics{}}},
			`{"run_id":"r","workflow_id":"w","metrics":{"duration":1.5,"steps":{}}}`},
		{"step results as StepOutput", run.Output{RunID: "r", WorkflowID: "w", StepResults: []run.StepOutput{{StepName: "s", StepType: "Step",
			ExecutorType: "agent", ExecutorName: "A", StepRunID: "sr", Content: "ok", Success: &yes}}},
			`{"run_id":"r","workflow_id":"w","step_results":[{"step_name":"s","step_type":"Step","executor_type":"agent","executor_name":"A","content":"ok","step_run_id":"sr","success":true}]}`},
		{"message and tool metrics with timing", run.Output{RunID: "r", AgentID: "a",
			Messages: []model.Message{{Role: model.RoleAssistant, Content: "x", Metrics: &model.MessageMetrics{Usage: model.Usage{InputTokens: 3, Duration: 0.5}}}},
			Tools:    []run.ToolExecution{{ToolCallID: "c", ToolName: "t", Metrics: &run.Metrics{StartTime: 10.25, EndTime: 10.75, Duration: 0.5}}}},
			`{"run_id":"r","agent_id":"a","messages":[{"role":"assistant","content":"x","metrics":{"input_tokens":3,"duration":0.5}}],"tools":[{"tool_call_id":"c","tool_name":"t","metrics":{"duration":0.5,"start_time":10.25,"end_time":10.75}}]}`},
		{"media content base64", run.Output{RunID: "r", AgentID: "a", Images: []run.Media{{ID: "i", Content: []byte("png"), MIMEType: "image/png"}}},
			`{"run_id":"r","agent_id":"a","images":[{"id":"i","content":"cG5n","mime_type":"image/png"}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(&tt.out)
			if err != nil {
				t.Fatal(err)
			}
			if d := jsontest.Diff([]byte(tt.want), got); d != "" {
				t.Errorf("%s\ngot  %s", d, got)
			}
		})
	}
}

// TestOutput_ReadsOlderAgentryRows: rows older Agentry versions stored (flat
// tool calls, a workflow input object, input audio under "audio") read with
// nothing lost and are written back in Agno's shape.
func TestOutput_ReadsOlderAgentryRows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, stored, want string
		check              func(*run.Output) bool
	}{
		{"flat tool calls",
			`{"run_id":"r","agent_id":"a","messages":[{"role":"assistant","tool_calls":[{"id":"c1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}]}]}`,
			`{"run_id":"r","agent_id":"a","messages":[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]}]}`,
			func(o *run.Output) bool {
				return o.Messages[0].ToolCalls[0] == model.ToolCall{ID: "c1", Name: "get_weather", Arguments: `{"city":"Paris"}`}
			}},
		{"workflow input stored as a RunInput object",
			`{"run_id":"r","workflow_id":"w","input":{"input_content":"go"}}`,
			`{"run_id":"r","workflow_id":"w","input":"go"}`,
			func(o *run.Output) bool { return o.Input.Text() == "go" }},
		{"input audio under audio",
			`{"run_id":"r","agent_id":"a","input":{"input_content":"hi","audio":[{"url":"u"}]}}`,
			`{"run_id":"r","agent_id":"a","input":{"input_content":"hi","audios":[{"url":"u"}]}}`,
			func(o *run.Output) bool { return len(o.Input.Audio) == 1 && o.Input.Audio[0].URL == "u" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var o run.Output
			if err := json.Unmarshal([]byte(tt.stored), &o); err != nil {
				t.Fatal(err)
			}
			if !tt.check(&o) {
				t.Errorf("decoded %+v", o)
			}
			got, err := json.Marshal(&o)
			if err != nil {
				t.Fatal(err)
			}
			if d := jsontest.Diff([]byte(tt.want), got); d != "" {
				t.Errorf("%s\ngot  %s", d, got)
			}
		})
	}
}

// TestOutput_GoChangesWinOverStoredForms: a field set after reading is
// written, not the stored form it replaced.
func TestOutput_GoChangesWinOverStoredForms(t *testing.T) {
	t.Parallel()
	stored := `{"run_id":"r","agent_id":"a","status":"PAUSED","requirements":[{"id":"q"}],"created_at":1700000000.5,` +
		`"messages":[{"role":"tool","from_history":false,"content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{"x":1}}}]}]}`
	var o run.Output
	if err := json.Unmarshal([]byte(stored), &o); err != nil {
		t.Fatal(err)
	}
	o.Status, o.Requirements, o.CreatedAt = run.StatusCancelled, nil, 1700000001
	o.Messages[0].FromHistory, o.Messages[0].Content = true, "done"
	o.Messages[0].ToolCalls[0].Arguments = `{"x":2}`
	got, err := json.Marshal(&o)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"run_id":"r","agent_id":"a","status":"CANCELLED","created_at":1700000001,` +
		`"messages":[{"role":"tool","from_history":true,"content":"done","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{\"x\":2}"}}]}]}`
	if d := jsontest.Diff([]byte(want), got); d != "" {
		t.Errorf("%s\ngot %s", d, got)
	}
}

// TestOutput_BadRunDataIsAnErrorNotAPanic: run_data that is not an object is
// an error naming what was expected.
func TestOutput_BadRunDataIsAnErrorNotAPanic(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`"just a string"`, `[1,2]`, `42`, `{"run_id":`, ``} {
		var o run.Output
		err := json.Unmarshal([]byte(in), &o)
		if err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
