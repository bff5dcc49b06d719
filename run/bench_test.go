package run_test

import (
	"encoding/json"
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
