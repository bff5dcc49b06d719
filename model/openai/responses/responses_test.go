package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/model"
)

type recorder struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
}

// newRecorder answers every request with the given bodies in turn (the last repeats).
func newRecorder(t *testing.T, contentType string, answers ...string) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.bodies = append(rec.bodies, b)
		n := len(rec.bodies)
		rec.mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, answers[min(n, len(answers))-1])
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) body(t *testing.T, i int) []byte {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if i >= len(r.bodies) {
		t.Fatalf("server got %d requests, want more than %d", len(r.bodies), i)
	}
	return r.bodies[i]
}

func assertJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	gb, _ := json.MarshalIndent(g, "", " ")
	wb, _ := json.MarshalIndent(w, "", " ")
	if !bytes.Equal(gb, wb) {
		t.Fatalf("request JSON mismatch\n got: %s\nwant: %s", gb, wb)
	}
}

func sseBody(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		name, data, _ := strings.Cut(e, "\x00")
		b.WriteString("event: " + name + "\ndata: " + data + "\n\n")
	}
	return b.String()
}

func ptr[T any](v T) *T { return &v }

// The encrypted reasoning item of turn one goes back, unchanged and before the
// call it led to, on turn two, after the message went through run_data JSON.
func TestReasoningItems_SurviveStorageAndAreSentBack(t *testing.T) {
	t.Parallel()
	turn1 := sseBody(created,
		ev("response.reasoning_summary_text.delta", `"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Thinking about "`),
		ev("response.reasoning_summary_text.delta", `"item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Paris."`),
		itemDone("0", reasoningItem),
		itemAdded("1", `{"id":"fc_1","type":"function_call","status":"in_progress","arguments":"","call_id":"call_a","name":"get_weather"}`),
		argsDelta("1", `{"city":"Paris"}`), itemDone("1", parisCall), completed(reasoningItem, parisCall))
	rec := newRecorder(t, "text/event-stream", turn1, responseObj("completed", message("Sunny.")))
	m, err := New(Config{APIKey: "sk", BaseURL: rec.URL, Model: "o4-mini", Params: model.Params{ReasoningEffort: "high", IncludeThoughts: true}})
	if err != nil {
		t.Fatal(err)
	}
	user := model.Text(model.RoleUser, "Weather in Paris?")
	var acc model.Accumulator
	for c, err := range m.Stream(context.Background(), &model.Request{Messages: []model.Message{user}, Tools: []model.ToolSpec{{Name: "get_weather"}}}) {
		if err != nil {
			t.Fatal(err)
		}
		acc.Add(c)
	}
	resp := acc.Response()
	if resp.Message.ReasoningContent != "Thinking about Paris." || len(resp.Message.ToolCalls) != 1 || resp.StopReason != "tool_calls" {
		t.Fatalf("turn one decoded as %+v", resp)
	}
	raw, err := json.Marshal(resp.Message)
	if err != nil {
		t.Fatal(err)
	}
	var stored model.Message
	if err := json.Unmarshal(raw, &stored); err != nil {
		t.Fatal(err)
	}
	next := &model.Request{Messages: []model.Message{user, stored, {Role: model.RoleTool, ToolCallID: "call_a", Content: "21C"}}}
	if _, err := m.Invoke(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, rec.body(t, 0), `{"model":"o4-mini","input":[{"role":"user","content":"Weather in Paris?"}],
		"tools":[{"type":"function","name":"get_weather","strict":false}],
		"reasoning":{"effort":"high","summary":"auto"},"store":false,"include":["reasoning.encrypted_content"],"stream":true}`)
	assertJSON(t, rec.body(t, 1), `{"model":"o4-mini","input":[{"role":"user","content":"Weather in Paris?"},
		`+reasoningItem+`,
		{"type":"function_call","call_id":"call_a","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},
		{"type":"function_call_output","call_id":"call_a","output":"21C"}],
		"reasoning":{"effort":"high","summary":"auto"},"store":false,"include":["reasoning.encrypted_content"]}`)
}

// A stored message's reasoning_output list (decoded from run_data, so with
// room past its length) is the caller's, shared by concurrent requests
// through the history: building a request must not write into it.
func TestRequest_StoredReasoningListIsNotWrittenTo(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", responseObj("completed", message("ok")))
	m, err := New(Config{APIKey: "sk", BaseURL: rec.URL, Model: "o4-mini"})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]any, 1, 4)
	items[0] = map[string]any{"id": "rs_1", "type": "reasoning", "encrypted_content": "gAAAA"}
	hist := model.Message{Role: model.RoleAssistant, Content: "Earlier.", ProviderData: map[string]any{reasoningKey: items},
		ToolCalls: []model.ToolCall{{ID: "call_a", Name: "f", Arguments: "{}"}}}
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi"), hist,
		{Role: model.RoleTool, ToolCallID: "call_a", Content: "ok"}}}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if spare := items[1:4]; spare[0] != nil || spare[1] != nil || spare[2] != nil {
		t.Fatalf("building the request wrote past the stored list's length: %v", spare)
	}
}

// An image goes with detail "auto" (OpenAI's default when left out): vLLM's
// Responses endpoint refuses an input_image without it (400, "detail: Field
// required"; vllm-project/vllm#57241).
func TestRequest_ParamsMediaAndBuiltinToolsOptIn(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", responseObj("completed", message("ok")))
	m, err := New(Config{APIKey: "sk", BaseURL: rec.URL, Model: "gpt-5", Params: model.Params{
		Temperature: ptr(0.3), TopP: ptr(0.8), MaxTokens: 700, ToolChoice: "get_weather", ParallelToolCalls: ptr(false),
		ResponseFormat: &model.ResponseFormat{Name: "w", Schema: json.RawMessage(`{"type":"object"}`), Strict: true},
		ExtraBody:      map[string]any{"service_tier": "priority"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Messages: []model.Message{
		{Role: model.RoleSystem, Content: "Be brief."},
		{Role: model.RoleUser, Content: "See", Parts: []model.Part{
			{Type: model.PartImage, URL: "https://example.com/a.png"},
			{Type: model.PartFile, Data: []byte("%PDF-1.4"), MIMEType: "application/pdf", Name: "r.pdf"},
			{Type: model.PartFile, URL: "file-abc"},
		}},
		{Role: model.RoleAssistant, Content: "Earlier answer."},
	}, Tools: []model.ToolSpec{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object"}`), Strict: true}}}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, rec.body(t, 0), `{"model":"gpt-5","input":[
		{"role":"developer","content":"Be brief."},
		{"role":"user","content":[{"type":"input_text","text":"See"},{"type":"input_image","image_url":"https://example.com/a.png","detail":"auto"},
		 {"type":"input_file","file_data":"data:application/pdf;base64,JVBERi0xLjQ=","filename":"r.pdf"},{"type":"input_file","file_id":"file-abc"}]},
		{"role":"assistant","content":"Earlier answer."}],
		"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"},"strict":true}],
		"tool_choice":{"type":"function","name":"get_weather"},"parallel_tool_calls":false,
		"text":{"format":{"type":"json_schema","name":"w","schema":{"type":"object"},"strict":true}},
		"temperature":0.3,"top_p":0.8,"max_output_tokens":700,"store":false,"include":["reasoning.encrypted_content"],"service_tier":"priority"}`)

	hosted, err := New(Config{APIKey: "sk", BaseURL: rec.URL, Model: "gpt-5", Store: true, BuiltinTools: []json.RawMessage{json.RawMessage(`{"type":"web_search"}`)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hosted.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, rec.body(t, 1), `{"model":"gpt-5","input":[{"role":"user","content":"hi"}],"tools":[{"type":"web_search"}],"store":true}`)
}

// OpenAI refuses include reasoning.encrypted_content for a model that does
// not reason (400 "Encrypted content is not supported with this model.",
// param include): it is asked for only when the model may reason, as Agno
// asks for it only for its reasoning models.
func TestRequest_EncryptedReasoningOnlyForModelsThatReason(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", responseObj("completed", message("ok")))
	for i, tc := range []struct {
		model   string
		include bool
	}{
		{"gpt-4o-mini", false}, {"gpt-4.1", false}, {"gpt-4o-2024-08-06", false}, {"chatgpt-4o-latest", false},
		{"gpt-3.5-turbo", false}, {"gpt-5-chat-latest", false}, {"openai/gpt-4o", false},
		{"o4-mini", true}, {"o3", true}, {"gpt-5", true}, {"gpt-5-mini", true}, {"my-azure-deployment", true},
	} {
		m, err := New(Config{APIKey: "sk", BaseURL: rec.URL, Model: tc.model})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}); err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(rec.body(t, i), []byte("reasoning.encrypted_content")); got != tc.include {
			t.Errorf("%s: include reasoning.encrypted_content = %v, want %v: %s", tc.model, got, tc.include, rec.body(t, i))
		}
	}
}

// OpenAI takes a text.format name of [a-zA-Z0-9_-] only (a 400 otherwise);
// a format named in a config file is sent with the other characters replaced.
func TestRequest_StructuredOutputNameIsOneOpenAITakes(t *testing.T) {
	t.Parallel()
	rec := newRecorder(t, "application/json", responseObj("completed", message("{}")))
	m, err := New(Config{APIKey: "sk", BaseURL: rec.URL, Model: "gpt-5"})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")},
		ResponseFormat: &model.ResponseFormat{Name: "Weather report (v2)", Schema: json.RawMessage(`{"type":"object"}`)}}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(rec.body(t, 0), []byte(`"name":"Weather_report__v2_"`)) {
		t.Fatalf("body %s, want the format named Weather_report__v2_", rec.body(t, 0))
	}
}

func TestNew_RefusesUnsupportedParamsAndBadBuiltinTools(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"stop":            {Params: model.Params{Stop: []string{"x"}}},
		"seed":            {Params: model.Params{Seed: ptr(int64(1))}},
		"thinking_budget": {Params: model.Params{ThinkingBudget: new(100)}},
		"builtin tool":    {BuiltinTools: []json.RawMessage{json.RawMessage(`{"type":"function","name":"x"}`)}},
	} {
		cfg.APIKey, cfg.Model = "k", "o4-mini"
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		} else if name != "builtin tool" && !errors.Is(err, model.ErrUnsupportedParam) {
			t.Errorf("%s: err = %v, want ErrUnsupportedParam", name, err)
		}
	}
}

func TestStream_FailuresAreClassified(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		body string
		want error
	}{
		{"response.failed server error", sseBody(created, ev("response.failed", `"response":{"id":"r","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}`)), model.ErrServer},
		{"error event rate limit", sseBody(created, ev("error", `"code":"rate_limit_exceeded","message":"slow down","param":null`)), model.ErrRateLimit},
		{"arguments for an unknown item", sseBody(created, argsDelta("3", "{}")), model.ErrMalformedResponse},
		// What the API sends at run time (not what its reference documents):
		// the error's fields nested under "error".
		{"nested error event rate limit", sseBody(created, ev("error", `"sequence_number":2,"error":{"type":"too_many_requests","code":"too_many_requests","message":"Too Many Requests","param":null}`)), model.ErrRateLimit},
		{"nested error event quota", sseBody(created, ev("error", `"sequence_number":2,"error":{"type":"insufficient_quota","code":"credit_balance_exhausted","message":"You have no credits remaining.","param":null}`)), model.ErrQuotaExceeded},
		{"error event with a text error", sseBody(created, ev("error", `"error":"the upstream model is unavailable"`)), model.ErrBadRequest},
		{"nested error event server", sseBody(created, ev("error", `"sequence_number":2,"error":{"type":"server_error","code":null,"message":"The server had an error while processing your request.","param":null}`)), model.ErrServer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := newRecorder(t, "text/event-stream", tc.body)
			m, _ := New(Config{APIKey: "sk", BaseURL: rec.URL, Model: "o4-mini"})
			var err error
			for _, e := range m.Stream(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}}) {
				if e != nil {
					err = e
				}
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "unknown error") {
				t.Errorf("err = %v: the provider's message is lost", err)
			}
		})
	}
}

func TestInvoke_IncompleteAnswerSaysLength(t *testing.T) {
	t.Parallel()
	body := strings.Replace(responseObj("incomplete", message("Hel")), `"incomplete_details":null`, `"incomplete_details":{"reason":"max_output_tokens"}`, 1)
	rec := newRecorder(t, "application/json", body)
	m, _ := New(Config{APIKey: "sk", BaseURL: rec.URL, Model: "o4-mini"})
	r, err := m.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "x")}})
	if err != nil || r.StopReason != "length" || r.Message.Content != "Hel" {
		t.Fatalf("got %+v, %v", r, err)
	}
}
