package bedrock

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// Claude refuses extended thinking with a forced tool choice ("Thinking may
// not be enabled when tool_choice forces tool use"): with a thinking budget,
// the structured-output tool is offered, not forced.
func TestRequest_ThinkingWithStructuredOutputDoesNotForceTheTool(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", []byte(`{"output":{"message":{"role":"assistant","content":[`+
		`{"toolUse":{"toolUseId":"s","name":"weather","input":{"city":"Paris"}}}]}},"stopReason":"tool_use"}`))
	m := newTestModel(t, rec.URL, model.Params{ThinkingBudget: new(1024)})
	for _, tools := range [][]model.ToolSpec{nil, {{Name: "look"}}} {
		req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "weather?")}, Tools: tools,
			ResponseFormat: &model.ResponseFormat{Name: "weather", Schema: []byte(`{"type":"object"}`)}}
		r, err := m.Invoke(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if r.Message.Content != `{"city":"Paris"}` {
			t.Errorf("content %q", r.Message.Content)
		}
		var body struct {
			ToolConfig struct {
				ToolChoice json.RawMessage `json:"toolChoice"`
			} `json:"toolConfig"`
			Additional map[string]any `json:"additionalModelRequestFields"`
		}
		if err := json.Unmarshal(rec.last(t), &body); err != nil {
			t.Fatal(err)
		}
		if c := string(body.ToolConfig.ToolChoice); c != "" && c != `{"auto":{}}` {
			t.Errorf("with %d tools and thinking, toolChoice %s forces a tool", len(tools), c)
		}
		if body.Additional["thinking"] == nil {
			t.Errorf("thinking not sent: %v", body.Additional)
		}
	}
}
