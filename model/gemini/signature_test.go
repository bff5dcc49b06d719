package gemini

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// Gemini 3 refuses a conversation whose model turn calls a function
// without a thought signature ("Function call is missing a
// thought_signature"): calls another model made (a fallback) or whose
// signature was lost get Google's documented sentinel on the turn's first
// call; real signatures are kept, and older models get none.
func TestRequest_UnsignedCallsGetTheSentinelOnGemini3(t *testing.T) {
	t.Parallel()
	req := &model.Request{Messages: []model.Message{
		model.Text(model.RoleUser, "weather?"),
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
			{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{ID: "call_b", Name: "get_weather", Arguments: `{"city":"Lyon"}`}}},
		{Role: model.RoleTool, ToolCallID: "call_a", ToolName: "get_weather", Content: "21C"},
		{Role: model.RoleTool, ToolCallID: "call_b", ToolName: "get_weather", Content: "19C"},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "gcall_r_0", Name: "now", ThoughtSignature: "cmVhbA=="}}},
		{Role: model.RoleTool, ToolCallID: "gcall_r_0", ToolName: "now", Content: "noon"},
	}}
	for _, tc := range []struct {
		model string
		want  []string // signatures of the calls, in order
	}{
		{"gemini-3-pro-preview", []string{"skip_thought_signature_validator", "", "cmVhbA=="}},
		{"gemini-2.5-flash", []string{"", "", "cmVhbA=="}},
	} {
		rec := newRecorder(t, "application/json", respJSON(textPart("ok"), "STOP", true))
		m, err := New(Config{APIKey: "k", BaseURL: rec.URL, Model: tc.model})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Invoke(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		_, body := rec.last(t)
		var w wireRequest
		if err := json.Unmarshal(body, &w); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range w.Contents {
			for _, p := range c.Parts {
				if p.FunctionCall != nil {
					got = append(got, p.ThoughtSignature)
				}
			}
		}
		if len(got) != len(tc.want) {
			t.Fatalf("%s: calls %q", tc.model, got)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: call %d signature %q, want %q", tc.model, i, got[i], tc.want[i])
			}
		}
	}
	if got := req.Messages[1].ToolCalls[0].ThoughtSignature; got != "" {
		t.Errorf("the request's message was changed: %q", got)
	}
}
