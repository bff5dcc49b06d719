package openai_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/openai"
)

func ptr[T any](v T) *T { return &v }

func TestRequest_ConversationToolsAndSettings(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{body: completion})
	req := &model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "You are terse."},
			{Role: model.RoleUser, Content: "Weather in Paris?"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "call_2", Name: "now"},
			}},
			{Role: model.RoleTool, ToolCallID: "call_1", ToolName: "get_weather", Content: `{"temp_c":21}`},
			{Role: model.RoleTool, ToolCallID: "call_2", ToolName: "now", Content: ""},
			{Role: model.RoleAssistant, Content: "21°C.", ReasoningContent: "not sent back"},
		},
		Tools: []model.ToolSpec{
			{Name: "get_weather", Description: "Current weather.", Strict: true,
				Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}`)},
			{Name: "now"},
		},
		ToolChoice:        "get_weather",
		ParallelToolCalls: ptr(false),
		Temperature:       ptr(0.0),
		MaxTokens:         256,
	}
	if _, err := newModel(t, f).Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, f.only().body, `{
		"model": "gpt-4o-mini",
		"messages": [
			{"role": "system", "content": "You are terse."},
			{"role": "user", "content": "Weather in Paris?"},
			{"role": "assistant", "tool_calls": [
				{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
				{"id": "call_2", "type": "function", "function": {"name": "now", "arguments": "{}"}}
			]},
			{"role": "tool", "tool_call_id": "call_1", "content": "{\"temp_c\":21}"},
			{"role": "tool", "tool_call_id": "call_2", "content": ""},
			{"role": "assistant", "content": "21°C."}
		],
		"tools": [
			{"type": "function", "function": {"name": "get_weather", "description": "Current weather.", "strict": true,
				"parameters": {"type":"object","properties":{"city":{"type":"string"}},"required":["city"],"additionalProperties":false}}},
			{"type": "function", "function": {"name": "now"}}
		],
		"tool_choice": {"type": "function", "function": {"name": "get_weather"}},
		"parallel_tool_calls": false,
		"temperature": 0,
		"max_completion_tokens": 256
	}`)
}

func TestRequest_ToolChoiceKeywordsAndNoTools(t *testing.T) {
	t.Parallel()
	tool := []model.ToolSpec{{Name: "f", Parameters: json.RawMessage(`{"type":"object"}`)}}
	tests := []struct {
		name       string
		req        model.Request
		toolChoice string // raw JSON, "" when absent
		parallel   string
	}{
		{"required", model.Request{Tools: tool, ToolChoice: "required", ParallelToolCalls: ptr(true)}, `"required"`, `true`},
		{"none", model.Request{Tools: tool, ToolChoice: "none"}, `"none"`, ``},
		{"auto", model.Request{Tools: tool, ToolChoice: "auto"}, `"auto"`, ``},
		{"unset", model.Request{Tools: tool}, ``, ``},
		{"dropped without tools, which OpenAI rejects", model.Request{ToolChoice: "required", ParallelToolCalls: ptr(true)}, ``, ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, reply{body: completion})
			tc.req.Messages = []model.Message{model.Text(model.RoleUser, "x")}
			if _, err := newModel(t, f).Invoke(context.Background(), &tc.req); err != nil {
				t.Fatal(err)
			}
			body := f.only().body
			if got := string(field(t, body, "tool_choice")); got != tc.toolChoice {
				t.Errorf("tool_choice = %s, want %s", got, tc.toolChoice)
			}
			if got := string(field(t, body, "parallel_tool_calls")); got != tc.parallel {
				t.Errorf("parallel_tool_calls = %s, want %s", got, tc.parallel)
			}
		})
	}
}

func TestRequest_StructuredOutput(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{events: []string{chunkContent(`{"city":"Paris","temp_c":21}`), chunkStop}})
	req := userReq("weather as JSON")
	req.ResponseFormat = &model.ResponseFormat{
		Name:   "Weather",
		Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"number"}},"required":["city","temp_c"],"additionalProperties":false}`),
		Strict: true,
	}
	_, resp, err := drain(t, newModel(t, f), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != `{"city":"Paris","temp_c":21}` {
		t.Errorf("content = %q", resp.Message.Content)
	}
	assertJSON(t, field(t, f.only().body, "response_format"), `{"type":"json_schema","json_schema":{
		"name":"Weather","strict":true,
		"schema":{"type":"object","properties":{"city":{"type":"string"},"temp_c":{"type":"number"}},"required":["city","temp_c"],"additionalProperties":false}}}`)
}

// OpenAI takes a json_schema name of [a-zA-Z0-9_-] only (a 400 otherwise);
// a format named in a config file ("Weather report") is sent with the other
// characters replaced, as the Anthropic provider names its tool.
func TestRequest_StructuredOutputNameIsOneOpenAITakes(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{"Weather report (v2)": "Weather_report__v2_", "": "response", "weather-v2_ok": "weather-v2_ok"} {
		f := newFake(t, reply{body: completion})
		req := userReq("weather as JSON")
		req.ResponseFormat = &model.ResponseFormat{Name: name, Schema: json.RawMessage(`{"type":"object"}`)}
		if _, err := newModel(t, f).Invoke(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		assertJSON(t, field(t, f.only().body, "response_format"), `{"type":"json_schema","json_schema":{"name":"`+want+`","schema":{"type":"object"}}}`)
	}
}

// DeepSeek in thinking mode refuses a tool-call turn whose assistant message
// lacks its reasoning_content (400 "Missing reasoning_content field in the
// assistant message"): it is sent back to DeepSeek, as Agno's DeepSeek model
// does, and to no other server.
func TestRequest_ReasoningContentGoesBackToDeepSeek(t *testing.T) {
	t.Parallel()
	for provider, want := range map[string]string{
		"DeepSeek": `{"role":"assistant","reasoning_content":"Need the weather.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]}`,
		"OpenAI":   `{"role":"assistant","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]}`,
	} {
		f := newFake(t, reply{body: completion})
		m, err := openai.New(openai.Config{APIKey: "k", BaseURL: f.URL + "/v1", Model: "deepseek-reasoner", ProviderName: provider})
		if err != nil {
			t.Fatal(err)
		}
		req := &model.Request{Messages: []model.Message{
			model.Text(model.RoleUser, "Weather?"),
			{Role: model.RoleAssistant, ReasoningContent: "Need the weather.", ToolCalls: []model.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: "{}"}}},
			{Role: model.RoleTool, ToolCallID: "call_1", Content: "21C"},
		}}
		if _, err := m.Invoke(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(f.only().body, &body); err != nil || len(body.Messages) != 3 {
			t.Fatalf("body %s: %v", f.only().body, err)
		}
		assertJSON(t, body.Messages[1], want)
	}
}

// A history from another server keeps that server's tool call ids: vLLM's
// "chatcmpl-tool-<uuid>" (46 characters), Kimi's "functions.f:0". OpenAI and
// Azure refuse ids over 40 characters and Mistral any but 9 letters and
// digits (a 400 either way); such ids are mapped, the same way on the call
// and on its result, and others are sent as they are.
func TestRequest_ForeignToolCallIDsFitTheServer(t *testing.T) {
	t.Parallel()
	long := "chatcmpl-tool-0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		provider, id string
		ok           func(string) bool
	}{
		{"OpenAI", long, func(s string) bool { return len(s) <= 40 && strings.HasPrefix(s, "call_") }},
		{"Azure", long, func(s string) bool { return len(s) <= 40 }},
		{"OpenAI", "call_short", func(s string) bool { return s == "call_short" }},
		{"Mistral", "functions.get_weather:0", func(s string) bool { return len(s) == 9 && isAlnum(s) }},
		{"Mistral", "D681PevKs", func(s string) bool { return s == "D681PevKs" }},
		{"Ollama", long, func(s string) bool { return s == long }},
	} {
		f := newFake(t, reply{body: completion})
		m, err := openai.New(openai.Config{APIKey: "k", BaseURL: f.URL + "/v1", Model: "m", ProviderName: tc.provider})
		if err != nil {
			t.Fatal(err)
		}
		req := &model.Request{Messages: []model.Message{
			model.Text(model.RoleUser, "Weather?"),
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: tc.id, Name: "get_weather", Arguments: "{}"}}},
			{Role: model.RoleTool, ToolCallID: tc.id, Content: "21C"},
		}}
		if _, err := m.Invoke(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Messages []struct {
				ToolCalls []struct {
					ID string `json:"id"`
				} `json:"tool_calls"`
				ToolCallID string `json:"tool_call_id"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(f.only().body, &body); err != nil || len(body.Messages) != 3 || len(body.Messages[1].ToolCalls) != 1 {
			t.Fatalf("body %s: %v", f.only().body, err)
		}
		call, result := body.Messages[1].ToolCalls[0].ID, body.Messages[2].ToolCallID
		if !tc.ok(call) || call != result {
			t.Errorf("%s: id %q sent as %q on the call and %q on its result", tc.provider, tc.id, call, result)
		}
	}
}

func isAlnum(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func TestRequest_MultimodalUserMessage(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	f := newFake(t, reply{body: completion})
	req := &model.Request{Messages: []model.Message{{
		Role:    model.RoleUser,
		Content: "What is in these?",
		Parts: []model.Part{
			{Type: model.PartImage, URL: "https://example.com/cat.jpg"},
			{Type: model.PartImage, Data: png}, // MIME sniffed
			{Type: model.PartAudio, Data: []byte("RIFF0000WAVE"), MIMEType: "audio/wav"},
			{Type: model.PartAudio, URL: "data:audio/mpeg;base64,SUQz"},
			{Type: model.PartFile, Data: []byte("%PDF-1.7"), MIMEType: "application/pdf", Name: "report.pdf"},
			{Type: model.PartFile, URL: "file-abc123"},
			{Type: model.PartText, Text: "Be brief."},
			{Type: model.PartText},
		},
	}}}
	if _, err := newModel(t, f).Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, field(t, f.only().body, "messages"), `[{"role":"user","content":[
		{"type":"text","text":"What is in these?"},
		{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}},
		{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUg=="}},
		{"type":"input_audio","input_audio":{"data":"UklGRjAwMDBXQVZF","format":"wav"}},
		{"type":"input_audio","input_audio":{"data":"SUQz","format":"mp3"}},
		{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0xLjc=","filename":"report.pdf"}},
		{"type":"file","file":{"file_id":"file-abc123"}},
		{"type":"text","text":"Be brief."}
	]}]`)
}

func TestRequest_UnsupportedInputFailsBeforeSending(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  *model.Request
		want string
	}{
		{"nil request", nil, "nil request"},
		{"video part", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartVideo, URL: "https://x/v.mp4"}}}}}, "video"},
		{"file by http URL", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartFile, URL: "https://x/a.pdf"}}}}}, "pass Data"},
		{"audio by http URL", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartAudio, URL: "https://x/a.wav"}}}}}, "not a data: URL"},
		{"audio in an unknown format", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartAudio, Data: []byte("x"), MIMEType: "audio/ogg"}}}}}, "wav or mp3"},
		{"image without a source", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartImage}}}}}, "neither URL nor Data"},
		{"image in a system message", &model.Request{Messages: []model.Message{{Role: model.RoleSystem, Parts: []model.Part{{Type: model.PartImage, URL: "https://x/i.png"}}}}}, "user message"},
		{"tool result without a call id", &model.Request{Messages: []model.Message{{Role: model.RoleTool, Content: "42"}}}, "tool_call_id"},
		{"unknown role", &model.Request{Messages: []model.Message{{Role: "narrator", Content: "once"}}}, "unknown role"},
		{"unnamed tool", &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}, Tools: []model.ToolSpec{{}}}, "no name"},
		{"thinking budget", &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}, ThinkingBudget: 1024}, "thinking_budget"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, reply{body: completion})
			m := newModel(t, f)
			_, err := m.Invoke(context.Background(), tc.req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Invoke err = %v, want it to mention %q", err, tc.want)
			}
			_, _, err = drain(t, m, tc.req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Stream err = %v, want it to mention %q", err, tc.want)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("server got %d requests, want none", n)
			}
		})
	}
}
