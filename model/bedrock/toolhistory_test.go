package bedrock

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
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

// Converse refuses a toolUseId outside [a-zA-Z0-9_-] or longer than 64
// characters (ValidationException): a history holding another provider's
// call ids (Kimi K2's "functions.get_weather:0", after a fallback) is sent
// with those ids made valid, the same way on the call and on its result so
// the pair still matches, and two long ids sharing a prefix stay apart.
func TestRequest_ForeignToolCallIDsAreMadeValid(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn"}`))
	m := newTestModel(t, rec.URL, model.Params{})
	long := strings.Repeat("x", 70)
	req := &model.Request{
		Tools: []model.ToolSpec{{Name: "get_weather"}},
		Messages: []model.Message{
			model.Text(model.RoleUser, "weather?"),
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				{ID: "functions.get_weather:0", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: long + "a", Name: "get_weather", Arguments: `{"city":"Lyon"}`},
				{ID: long + "b", Name: "get_weather", Arguments: `{"city":"Nice"}`},
			}},
			{Role: model.RoleTool, ToolCallID: "functions.get_weather:0", Content: "21C"},
			{Role: model.RoleTool, ToolCallID: long + "a", Content: "19C"},
			{Role: model.RoleTool, ToolCallID: long + "b", Content: "24C"},
		}}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Content []struct {
				ToolUse    *struct{ ToolUseID string } `json:"toolUse"`
				ToolResult *struct{ ToolUseID string } `json:"toolResult"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(rec.last(t), &body); err != nil {
		t.Fatal(err)
	}
	valid := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	var calls, results []string
	for _, msg := range body.Messages {
		for _, b := range msg.Content {
			if b.ToolUse != nil {
				calls = append(calls, b.ToolUse.ToolUseID)
			}
			if b.ToolResult != nil {
				results = append(results, b.ToolResult.ToolUseID)
			}
		}
	}
	if len(calls) != 3 || !slices.Equal(calls, results) {
		t.Fatalf("call ids %q and result ids %q do not pair up", calls, results)
	}
	for _, id := range calls {
		if !valid.MatchString(id) {
			t.Errorf("toolUseId %q is not one Converse takes", id)
		}
	}
	if calls[0] != "functions_get_weather_0" {
		t.Errorf("toolUseId %q, want functions_get_weather_0", calls[0])
	}
	if calls[1] == calls[2] {
		t.Errorf("two long ids became one: %q", calls[1])
	}
}
