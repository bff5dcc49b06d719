package bedrock

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// Converse refuses a conversation whose turns do not alternate ("A
// conversation must alternate between user and assistant roles"): two user
// messages in a row (a run that failed before answering, then the next one's
// input), a user message after tool results, or two assistant messages are
// sent as one turn each.
func TestRequest_ConsecutiveSameRoleMessagesShareOneTurn(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn"}`))
	m := newTestModel(t, rec.URL, model.Params{})
	req := &model.Request{
		History: model.NewHistory([]model.Message{model.Text(model.RoleUser, "first try"), model.Text(model.RoleAssistant, "partial"), model.Text(model.RoleAssistant, "more")}),
		Messages: []model.Message{
			model.Text(model.RoleUser, "hello"),
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "t1", Name: "look", Arguments: `{}`}}},
			{Role: model.RoleTool, ToolCallID: "t1", Content: "seen"},
			model.Text(model.RoleUser, "and now?"),
			model.Text(model.RoleUser, "please"),
		},
	}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, rec.last(t), `{"messages":[
	  {"role":"user","content":[{"text":"first try"}]},
	  {"role":"assistant","content":[{"text":"partial"},{"text":"more"}]},
	  {"role":"user","content":[{"text":"hello"}]},
	  {"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"look","input":{}}}]},
	  {"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"seen"}]}},{"text":"and now?"},{"text":"please"}]}],
	 "toolConfig":{"tools":[{"toolSpec":{"name":"look","description":"Called earlier in this conversation; not available now.","inputSchema":{"json":{"type":"object","properties":{}}}}}]}}`)
}
