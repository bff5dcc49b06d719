package anthropic

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

func TestParams_EveryParameterReachesTheWire(t *testing.T) {
	t.Parallel()
	f := newFakeAPI(t, jsonReply(200, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`))
	temp, topP, off := 0.3, 0.9, false
	m, err := New(Config{APIKey: "k", BaseURL: f.srv.URL, Model: "claude-sonnet-4-5", Params: model.Params{
		Temperature: &temp, TopP: &topP, MaxTokens: 300, Stop: []string{"END"}, ThinkingBudget: new(2048),
		ToolChoice: "auto", ParallelToolCalls: &off,
		ExtraHeaders: map[string]string{"anthropic-beta": "context-1m-2025-08-07"}, ExtraBody: map[string]any{"metadata": map[string]any{"user_id": "u1"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	req := userReq("hi")
	req.Tools = []model.ToolSpec{{Name: "t"}}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := jsonOf(t, f.lastBody())
	want := `{"max_tokens":300,"messages":[{"content":[{"text":"hi","type":"text"}],"role":"user"}],"metadata":{"user_id":"u1"},"model":"claude-sonnet-4-5","stop_sequences":["END"],"temperature":0.3,"thinking":{"budget_tokens":2048,"type":"enabled"},"tool_choice":{"disable_parallel_tool_use":true,"type":"auto"},"tools":[{"input_schema":{"properties":{},"type":"object"},"name":"t"}],"top_p":0.9}`
	if got != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
	if h := f.requests()[0].header.Get("anthropic-beta"); h != "context-1m-2025-08-07" {
		t.Errorf("extra header anthropic-beta = %q", h)
	}
}

func TestNew_RefusesUnsupportedParams(t *testing.T) {
	t.Parallel()
	seed := int64(1)
	pen := 0.1
	for name, p := range map[string]model.Params{
		"seed":              {Seed: &seed},
		"presence_penalty":  {PresencePenalty: &pen},
		"frequency_penalty": {FrequencyPenalty: &pen},
		"reasoning_effort":  {ReasoningEffort: "high"},
		"include_thoughts":  {IncludeThoughts: true},
		"response_format":   {ResponseFormat: &model.ResponseFormat{}},
	} {
		_, err := New(Config{APIKey: "k", Model: "claude-sonnet-4-5", Params: p})
		if !errors.Is(err, model.ErrUnsupportedParam) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: New err = %v, want ErrUnsupportedParam naming it", name, err)
		}
	}
}
