package bedrock

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// extra_body's additionalModelRequestFields (a beta flag, top_k) join the
// thinking configuration thinking_budget makes instead of silently replacing
// it; a key both set is extra_body's.
func TestRequest_ExtraAdditionalFieldsKeepTheThinkingBudget(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn"}`))
	extra := map[string]any{"additionalModelRequestFields": map[string]any{"anthropic_beta": []string{"interleaved-thinking-2025-05-14"}, "top_k": 5},
		"performanceConfig": map[string]any{"latency": "optimized"}}
	m := newTestModel(t, rec.URL, model.Params{ThinkingBudget: new(2048), ExtraBody: extra})
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, rec.last(t), `{"messages":[{"role":"user","content":[{"text":"hi"}]}],
	 "additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":2048},"anthropic_beta":["interleaved-thinking-2025-05-14"],"top_k":5},
	 "performanceConfig":{"latency":"optimized"}}`)
	if _, ok := extra["additionalModelRequestFields"]; !ok || len(extra) != 2 {
		t.Errorf("the configured extra_body was changed: %v", extra)
	}
	// Without a thinking budget extra_body's fields are sent as they are.
	m = newTestModel(t, rec.URL, model.Params{ExtraBody: map[string]any{"additionalModelRequestFields": map[string]any{"top_k": 5}}})
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, rec.last(t), `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"additionalModelRequestFields":{"top_k":5}}`)
}
