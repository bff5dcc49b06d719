package bedrock

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// Converse refuses a text block that is blank ("The text field in the
// ContentBlock object … is blank"): whitespace a model wrote before its tool
// call, a blank system prompt or tool result is not sent as a text block.
func TestRequest_BlankTextIsNotSentAsABlock(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn"}`))
	m := newTestModel(t, rec.URL, model.Params{})
	req := &model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "\n"},
			{Role: model.RoleUser, Content: "hi", Parts: []model.Part{{Type: model.PartText, Text: "  "}}},
			{Role: model.RoleAssistant, Content: "\n\n", ToolCalls: []model.ToolCall{{ID: "t1", Name: "look", Arguments: `{}`}}},
			{Role: model.RoleTool, ToolCallID: "t1", Content: " \n"},
		},
		Tools: []model.ToolSpec{{Name: "look"}},
	}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, rec.last(t), `{"messages":[
	  {"role":"user","content":[{"text":"hi"}]},
	  {"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"look","input":{}}}]},
	  {"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"(empty)"}]}}]}],
	 "toolConfig":{"tools":[{"toolSpec":{"name":"look","inputSchema":{"json":{"type":"object","properties":{}}}}}]}}`)
}
