package anthropic

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// pick walks a decoded JSON body along a dotted path ("messages.1.content.0").
func pick(t *testing.T, v any, path string) any {
	t.Helper()
	for _, key := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[key]
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i >= len(x) {
				t.Fatalf("path %q: no element %q in %s", path, key, jsonOf(t, x))
			}
			v = x[i]
		default:
			t.Fatalf("path %q: cannot index %T with %q", path, v, key)
		}
	}
	return v
}

func testModel(t *testing.T) *Model {
	t.Helper()
	m, err := New(Config{APIKey: "k", Model: "claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func encode(t *testing.T, req *model.Request) map[string]any {
	t.Helper()
	plan, err := testModel(t).buildRequest(req, false)
	if err != nil {
		t.Fatalf("buildRequest: %v", err)
	}
	var body map[string]any
	if err := json.Unmarshal(plan.body, &body); err != nil {
		t.Fatal(err)
	}
	return body
}

var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")

func TestBuildRequest_MapsToMessagesAPI(t *testing.T) {
	t.Parallel()
	no := false
	temp := 0.2
	weather := model.ToolSpec{Name: "get_weather", Description: "Weather by city", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}
	tests := []struct {
		name string
		req  model.Request
		// want maps a path in the request body to its expected JSON.
		want map[string]string
	}{
		{
			name: "system messages become the top-level system prompt",
			req: model.Request{Messages: []model.Message{
				model.Text(model.RoleSystem, "You are terse."), model.Text(model.RoleUser, "hi"), model.Text(model.RoleSystem, "Answer in French."),
			}},
			want: map[string]string{
				"system":     `"You are terse.\n\nAnswer in French."`,
				"messages":   `[{"content":[{"text":"hi","type":"text"}],"role":"user"}]`,
				"max_tokens": `4096`,
				"model":      `"claude-sonnet-4-5"`,
			},
		},
		{
			name: "consecutive tool results merge into one user message",
			req: model.Request{Messages: []model.Message{
				model.Text(model.RoleUser, "weather and time?"),
				{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "t1", Name: "get_weather", Arguments: `{"city":"Paris"}`}, {ID: "t2", Name: "get_time", Arguments: `{}`}}},
				{Role: model.RoleTool, ToolCallID: "t1", ToolName: "get_weather", Content: "18C"},
				{Role: model.RoleTool, ToolCallID: "t2", ToolName: "get_time", Content: "clock broke", ToolCallError: true},
				model.Text(model.RoleUser, "thanks"),
			}},
			want: map[string]string{
				"messages.1": `{"content":[{"id":"t1","input":{"city":"Paris"},"name":"get_weather","type":"tool_use"},{"id":"t2","input":{},"name":"get_time","type":"tool_use"}],"role":"assistant"}`,
				"messages.2": `{"content":[{"content":"18C","tool_use_id":"t1","type":"tool_result"},{"content":"clock broke","is_error":true,"tool_use_id":"t2","type":"tool_result"}],"role":"user"}`,
				"messages.3": `{"content":[{"text":"thanks","type":"text"}],"role":"user"}`,
			},
		},
		{
			// Kimi K2 (through an OpenAI-compatible server) names its calls
			// "functions.get_weather:0"; the Messages API takes ids of
			// [a-zA-Z0-9_-] only, so a history from a fallback model keeps
			// its pairs with the other characters replaced on both sides.
			name: "tool call ids from other providers are made ones the API takes",
			req: model.Request{Messages: []model.Message{
				model.Text(model.RoleUser, "weather?"),
				{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "functions.get_weather:0", Name: "get_weather", Arguments: `{}`}}},
				{Role: model.RoleTool, ToolCallID: "functions.get_weather:0", ToolName: "get_weather", Content: "18C"},
			}},
			want: map[string]string{
				"messages.1": `{"content":[{"id":"functions_get_weather_0","input":{},"name":"get_weather","type":"tool_use"}],"role":"assistant"}`,
				"messages.2": `{"content":[{"content":"18C","tool_use_id":"functions_get_weather_0","type":"tool_result"}],"role":"user"}`,
			},
		},
		{
			name: "stored arguments that are not a JSON object are sent as {}",
			req: model.Request{Messages: []model.Message{
				model.Text(model.RoleUser, "go"),
				{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
					{ID: "a", Name: "f", Arguments: `{"city": "Par`}, {ID: "b", Name: "f", Arguments: `[1,2]`},
					{ID: "c", Name: "f", Arguments: ``}, {ID: "d", Name: "f", Arguments: ` {"ok":true} `},
				}},
			}},
			want: map[string]string{
				"messages.1.content.0.input": `{}`,
				"messages.1.content.1.input": `{}`,
				"messages.1.content.2.input": `{}`,
				"messages.1.content.3.input": `{"ok":true}`,
			},
		},
		{
			name: "thinking blocks are sent back first and verbatim",
			req: model.Request{Messages: []model.Message{
				model.Text(model.RoleUser, "go"),
				{Role: model.RoleAssistant, Content: "Checking.", ReasoningContent: "hmm", ToolCalls: []model.ToolCall{{ID: "t1", Name: "f", Arguments: `{}`}},
					Thinking: []model.ThinkingBlock{
						{Type: "thinking", Thinking: "hmm", Signature: "sig=="},
						{Type: "redacted_thinking", Data: "opaque"},
						{Type: "thinking", Thinking: "unsigned, from another provider"},
					}},
			}},
			want: map[string]string{
				"messages.1.content": `[{"signature":"sig==","thinking":"hmm","type":"thinking"},{"data":"opaque","type":"redacted_thinking"},{"text":"Checking.","type":"text"},{"id":"t1","input":{},"name":"f","type":"tool_use"}]`,
			},
		},
		{
			name: "images as base64, url and data URL; PDFs as documents",
			req: model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "describe", Parts: []model.Part{
				{Type: model.PartImage, Data: pngBytes},
				{Type: model.PartImage, URL: "https://example.com/cat.jpg"},
				{Type: model.PartImage, URL: "data:image/webp;base64,UklGRg=="},
				{Type: model.PartFile, Data: []byte("%PDF-1.7\n"), Name: "report.pdf"},
				{Type: model.PartFile, URL: "https://example.com/a.pdf"},
				{Type: model.PartFile, Data: []byte("plain notes"), MIMEType: "text/plain; charset=utf-8"},
			}}}},
			want: map[string]string{
				"messages.0.content.0": `{"text":"describe","type":"text"}`,
				"messages.0.content.1": `{"source":{"data":"iVBORw0KGgoAAAANSUhEUg==","media_type":"image/png","type":"base64"},"type":"image"}`,
				"messages.0.content.2": `{"source":{"type":"url","url":"https://example.com/cat.jpg"},"type":"image"}`,
				"messages.0.content.3": `{"source":{"data":"UklGRg==","media_type":"image/webp","type":"base64"},"type":"image"}`,
				"messages.0.content.4": `{"source":{"data":"JVBERi0xLjcK","media_type":"application/pdf","type":"base64"},"title":"report.pdf","type":"document"}`,
				"messages.0.content.5": `{"source":{"type":"url","url":"https://example.com/a.pdf"},"type":"document"}`,
				"messages.0.content.6": `{"source":{"data":"plain notes","media_type":"text/plain","type":"text"},"type":"document"}`,
			},
		},
		{
			name: "tools with and without parameters",
			req:  model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}, Tools: []model.ToolSpec{weather, {Name: "now"}}},
			want: map[string]string{
				"tools":       `[{"description":"Weather by city","input_schema":{"properties":{"city":{"type":"string"}},"type":"object"},"name":"get_weather"},{"input_schema":{"properties":{},"type":"object"},"name":"now"}]`,
				"tool_choice": `null`,
			},
		},
		{
			name: "tool choice auto",
			req:  model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}, Tools: []model.ToolSpec{weather}, ToolChoice: "auto"},
			want: map[string]string{"tool_choice": `{"type":"auto"}`},
		},
		{
			name: "tool choice required is any",
			req:  model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}, Tools: []model.ToolSpec{weather}, ToolChoice: "required"},
			want: map[string]string{"tool_choice": `{"type":"any"}`},
		},
		{
			name: "tool choice none",
			req:  model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}, Tools: []model.ToolSpec{weather}, ToolChoice: "none", ParallelToolCalls: &no},
			want: map[string]string{"tool_choice": `{"type":"none"}`},
		},
		{
			name: "tool choice by name without parallel calls",
			req:  model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}, Tools: []model.ToolSpec{weather}, ToolChoice: "get_weather", ParallelToolCalls: &no},
			want: map[string]string{"tool_choice": `{"disable_parallel_tool_use":true,"name":"get_weather","type":"tool"}`},
		},
		{
			name: "parallel calls off alone",
			req:  model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}, Tools: []model.ToolSpec{weather}, ParallelToolCalls: &no},
			want: map[string]string{"tool_choice": `{"disable_parallel_tool_use":true,"type":"auto"}`},
		},
		{
			name: "tool choice without tools is not sent",
			req:  model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}, ToolChoice: "required"},
			want: map[string]string{"tool_choice": `null`, "tools": `null`},
		},
		{
			name: "thinking budget raises the default max_tokens above it",
			req:  model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}, ThinkingBudget: 10000},
			want: map[string]string{"thinking": `{"budget_tokens":10000,"type":"enabled"}`, "max_tokens": `14096`},
		},
		{
			name: "explicit max_tokens and temperature",
			req:  model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}, MaxTokens: 300, Temperature: &temp},
			want: map[string]string{"max_tokens": `300`, "temperature": `0.2`, "thinking": `null`, "stream": `null`},
		},
		{
			name: "structured output is a forced tool",
			req: model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")},
				ResponseFormat: &model.ResponseFormat{Name: "City Facts!", Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)}},
			want: map[string]string{
				"tools.0.name":         `"City_Facts_"`,
				"tools.0.input_schema": `{"properties":{"name":{"type":"string"}},"type":"object"}`,
				"tool_choice":          `{"name":"City_Facts_","type":"tool"}`,
			},
		},
		{
			name: "structured output with the caller's tools lets the model pick any tool",
			req: model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}, Tools: []model.ToolSpec{weather},
				ResponseFormat: &model.ResponseFormat{Schema: json.RawMessage(`{"type":"object"}`)}},
			want: map[string]string{
				"tools.1.name": `"structured_output"`,
				"tool_choice":  `{"type":"any"}`,
			},
		},
		{
			name: "tool result with an image part",
			req: model.Request{Messages: []model.Message{
				{Role: model.RoleTool, ToolCallID: "t1", Content: "chart", Parts: []model.Part{{Type: model.PartImage, URL: "https://example.com/c.png"}}},
			}},
			want: map[string]string{
				"messages.0.content.0": `{"content":[{"text":"chart","type":"text"},{"source":{"type":"url","url":"https://example.com/c.png"},"type":"image"}],"tool_use_id":"t1","type":"tool_result"}`,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			body := encode(t, &tc.req)
			for path, want := range tc.want {
				var got any
				if strings.Contains(path, ".") {
					got = pick(t, body, path)
				} else {
					got = body[path]
				}
				if g := jsonOf(t, got); g != want {
					t.Errorf("%s:\n got %s\nwant %s", path, g, want)
				}
			}
		})
	}
}

func TestBuildRequest_RejectsWhatTheAPICannotTake(t *testing.T) {
	t.Parallel()
	user := model.Text(model.RoleUser, "x")
	tests := []struct {
		name    string
		req     *model.Request
		wantErr string
	}{
		{"nil request", nil, "nil request"},
		{"audio part", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartAudio, Data: []byte("RIFF")}}}}}, "audio parts are not supported"},
		{"unsupported file type", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartFile, Name: "a.zip", Data: []byte("PK\x03\x04")}}}}}, "not supported"},
		{"data URL without base64", &model.Request{Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartImage, URL: "data:image/png,abc"}}}}}, "data URL"},
		{"unknown role", &model.Request{Messages: []model.Message{{Role: "developer", Content: "x"}}}, `unknown role "developer"`},
		{"tool result without call id", &model.Request{Messages: []model.Message{{Role: model.RoleTool, Content: "x"}}}, "no ToolCallID"},
		{"tool choice names a missing tool", &model.Request{Messages: []model.Message{user}, Tools: []model.ToolSpec{{Name: "a"}}, ToolChoice: "b"}, `"b" names no tool`},
		{"tool parameters not JSON", &model.Request{Messages: []model.Message{user}, Tools: []model.ToolSpec{{Name: "a", Parameters: json.RawMessage(`{`)}}}, "not valid JSON"},
		{"response format collides with a tool", &model.Request{Messages: []model.Message{user}, Tools: []model.ToolSpec{{Name: "out"}},
			ResponseFormat: &model.ResponseFormat{Name: "out", Schema: json.RawMessage(`{}`)}}, "collides"},
		{"response format without schema", &model.Request{Messages: []model.Message{user}, ResponseFormat: &model.ResponseFormat{Name: "out"}}, "valid JSON Schema"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := testModel(t).buildRequest(tc.req, false)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
