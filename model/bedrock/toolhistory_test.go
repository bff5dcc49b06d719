package bedrock

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// Converse refuses a conversation holding toolUse or toolResult blocks
// without a toolConfig ("The toolConfig field must be defined when using
// toolUse and toolResult content blocks"): a call without tools over a
// conversation that used them (the agent's output model, a summary) declares
// the tools it used, and forces none.
func TestRequest_ToolHistoryWithoutToolsStillDeclaresThem(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn"}`))
	m := newTestModel(t, rec.URL, model.Params{})
	req := &model.Request{Messages: []model.Message{
		model.Text(model.RoleUser, "weather?"),
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "t1", Name: "get_weather", Arguments: `{"city":"Paris"}`}, {ID: "t2", Name: "now"}}},
		{Role: model.RoleTool, ToolCallID: "t1", Content: "21C"},
		{Role: model.RoleTool, ToolCallID: "t2", Content: "noon"},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "t3", Name: "get_weather", Arguments: `{"city":"Lyon"}`}}},
		{Role: model.RoleTool, ToolCallID: "t3", Content: "19C"},
	}}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, rec.last(t), `{"messages":[
	  {"role":"user","content":[{"text":"weather?"}]},
	  {"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"get_weather","input":{"city":"Paris"}}},{"toolUse":{"toolUseId":"t2","name":"now","input":{}}}]},
	  {"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"21C"}]}},{"toolResult":{"toolUseId":"t2","content":[{"text":"noon"}]}}]},
	  {"role":"assistant","content":[{"toolUse":{"toolUseId":"t3","name":"get_weather","input":{"city":"Lyon"}}}]},
	  {"role":"user","content":[{"toolResult":{"toolUseId":"t3","content":[{"text":"19C"}]}}]}],
	 "toolConfig":{"tools":[
	  {"toolSpec":{"name":"get_weather","description":"Called earlier in this conversation; not available now.","inputSchema":{"json":{"type":"object","properties":{}}}}},
	  {"toolSpec":{"name":"now","description":"Called earlier in this conversation; not available now.","inputSchema":{"json":{"type":"object","properties":{}}}}}]}}`)
}
