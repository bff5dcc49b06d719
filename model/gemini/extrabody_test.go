package gemini

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// Settings Agentry has no parameter for (topK, responseModalities) live in
// generationConfig; given there through extra_body they join the
// generationConfig the parameters build instead of silently replacing it
// (temperature, the response schema, thinking). A key both set is extra_body's.
func TestRequest_ExtraGenerationConfigKeepsTheParameters(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", respJSON(textPart("ok"), "STOP", true))
	extra := map[string]any{"generationConfig": map[string]any{"topK": 40, "responseModalities": []string{"TEXT", "IMAGE"}, "temperature": 0.9},
		"safetySettings": []map[string]string{{"category": "HARM_CATEGORY_HATE_SPEECH", "threshold": "BLOCK_NONE"}}}
	m, err := New(Config{APIKey: "k", BaseURL: rec.URL, Model: "gemini-2.5-flash-image", Params: model.Params{
		Temperature: ptr(0.2), MaxTokens: 100, ThinkingBudget: new(512), ExtraBody: extra}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}); err != nil {
		t.Fatal(err)
	}
	_, body := rec.last(t)
	assertJSON(t, body, `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],
	 "generationConfig":{"temperature":0.9,"maxOutputTokens":100,"thinkingConfig":{"thinkingBudget":512},"topK":40,"responseModalities":["TEXT","IMAGE"]},
	 "safetySettings":[{"category":"HARM_CATEGORY_HATE_SPEECH","threshold":"BLOCK_NONE"}]}`)
	if len(extra) != 2 || extra["generationConfig"] == nil {
		t.Errorf("the configured extra_body was changed: %v", extra)
	}
}
