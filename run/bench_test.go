package run_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
)

// agentryRun is a run as Agentry builds it: a tool turn and an answer.
func agentryRun() *run.Output {
	args := json.RawMessage(`{"city":"Paris"}`)
	return &run.Output{RunID: "r1", AgentID: "weather", AgentName: "Weather", SessionID: "s1", UserID: "u1",
		Input: &run.Input{InputContent: "What is the weather in Paris?"}, Content: "It is sunny in Paris.", ContentType: "str",
		Model: "gpt-4o", ModelProvider: "OpenAI", Status: run.StatusCompleted, CreatedAt: 1770000000, UpdatedAt: 1770000002,
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "You are a weather agent.", CreatedAt: 1770000000},
			{Role: model.RoleUser, Content: "What is the weather in Paris?", CreatedAt: 1770000000},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: string(args)}}, CreatedAt: 1770000001},
			{Role: model.RoleTool, Content: `{"conditions":"sunny"}`, ToolCallID: "call_1", ToolName: "get_weather", ToolArgs: args, CreatedAt: 1770000001},
			{Role: model.RoleAssistant, Content: "It is sunny in Paris.", CreatedAt: 1770000002},
		},
		Tools:   []run.ToolExecution{{ToolCallID: "call_1", ToolName: "get_weather", ToolArgs: args, Result: `{"conditions":"sunny"}`, CreatedAt: 1770000001}},
		Metrics: &run.Metrics{Usage: model.Usage{InputTokens: 120, OutputTokens: 30, TotalTokens: 150}, Duration: 1.25},
	}
}

func BenchmarkOutputEncode_AgentryRun(b *testing.B) {
	o := agentryRun()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(o); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOutputDecode_AgentryRun(b *testing.B) {
	data, err := json.Marshal(agentryRun())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var o run.Output
		if err := json.Unmarshal(data, &o); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOutputDecode_AgnoRun(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "agno", "agent_v3_tools.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var o run.Output
		if err := json.Unmarshal(data, &o); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOutputReencode_AgnoRun(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "agno", "agent_v3_tools.json"))
	if err != nil {
		b.Fatal(err)
	}
	var o run.Output
	if err := json.Unmarshal(data, &o); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := json.Marshal(&o); err != nil {
			b.Fatal(err)
		}
	}
}

// conversationRuns are the runs a 25-turn conversation stores, shaped as the
// agent writes them (agent's BenchmarkConversation25Turns): input, content,
// run metrics with one model's details, a user and an assistant message with
// its metrics.
func conversationRuns() []*run.Output {
	const answer = "Noted. Tell me more about it and I will remember."
	runs := make([]*run.Output, 25)
	for i := range runs {
		q := fmt.Sprintf("This is message number %d of our conversation.", i)
		in, out := 40+32*i, 13
		u := model.Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}
		mu := u
		mu.Duration, mu.TimeToFirstToken = 0.000001583, 2.81e-7
		runs[i] = &run.Output{RunID: fmt.Sprintf("9c8862ad-79d6-4edc-986f-81df79668e%02d", i), AgentID: "bench", AgentName: "Bench",
			SessionID: "s", Content: answer, ContentType: "str", Model: "scripted", ModelProvider: "Scripted",
			Status: run.StatusCompleted, CreatedAt: 1796209145, UpdatedAt: 1796209145, Input: &run.Input{InputContent: q},
			Metrics: &run.Metrics{Usage: u, Duration: 0.000079751, TimeToFirstToken: 0.000077958,
				Details: map[string][]run.ModelMetrics{"model": {{ID: "scripted", Provider: "Scripted", Usage: u}}}},
			Messages: []model.Message{
				{Role: model.RoleUser, Content: q, CreatedAt: 1796209145},
				{Role: model.RoleAssistant, Content: answer, Metrics: &model.MessageMetrics{Usage: mu}, CreatedAt: 1796209145},
			},
		}
	}
	return runs
}

// BenchmarkOutputMarshalJSON_Conversation25 encodes the 25 runs of a
// 25-turn conversation per op, as the agent does when it stores them
// (db.RunFromOutput calls the method itself).
func BenchmarkOutputMarshalJSON_Conversation25(b *testing.B) {
	runs := conversationRuns()
	b.ReportAllocs()
	for b.Loop() {
		for _, o := range runs {
			if _, err := o.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
