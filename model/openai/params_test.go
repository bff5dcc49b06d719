package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/openai"
)

func TestParams_EveryParameterReachesTheWire(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{body: completion})
	m, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: f.URL + "/v1", Model: "o4-mini", Params: model.Params{
		Temperature: ptr(0.2), TopP: ptr(0.9), MaxTokens: 512, Stop: []string{"END"}, Seed: ptr(int64(7)),
		PresencePenalty: ptr(0.5), FrequencyPenalty: ptr(-0.5), ReasoningEffort: "high",
		ResponseFormat: &model.ResponseFormat{}, ToolChoice: "required", ParallelToolCalls: ptr(false),
		ExtraHeaders: map[string]string{"X-Trace": "t1"}, ExtraBody: map[string]any{"service_tier": "flex", "top_p": 0.8},
	}})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}, Tools: []model.ToolSpec{{Name: "t"}}}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := f.only()
	if got.header.Get("X-Trace") != "t1" {
		t.Errorf("extra header not sent: %v", got.header)
	}
	// extra_body wins over a mapped parameter (top_p), as it is merged last.
	assertJSON(t, got.body, `{"model":"o4-mini","messages":[{"role":"user","content":"hi"}],
		"tools":[{"type":"function","function":{"name":"t"}}],"tool_choice":"required","parallel_tool_calls":false,
		"response_format":{"type":"json_object"},"temperature":0.2,"top_p":0.8,"max_completion_tokens":512,
		"stop":["END"],"seed":7,"presence_penalty":0.5,"frequency_penalty":-0.5,"reasoning_effort":"high","service_tier":"flex"}`)
}

func TestParams_RequestFieldsOverrideModelParams(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{body: completion})
	m, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: f.URL + "/v1", Model: "gpt-4o-mini",
		Params: model.Params{Temperature: ptr(0.2), MaxTokens: 100}})
	if err != nil {
		t.Fatal(err)
	}
	req := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}, Temperature: ptr(1.0), MaxTokens: 9}
	if _, err := m.Invoke(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	assertJSON(t, f.only().body, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"temperature":1,"max_completion_tokens":9}`)
}

// Ollama's OpenAI layer (ollama/ollama#7125) and other compatible
// servers read only max_tokens and silently ignore max_completion_tokens,
// which OpenAI itself wants: a server that is not OpenAI or Azure gets both.
func TestParams_MaxTokensReachCompatibleServers(t *testing.T) {
	t.Parallel()
	for provider, want := range map[string]string{
		// Mistral refuses max_completion_tokens (422 extra_forbidden), and
		// names the seed random_seed.
		"Mistral":          `"max_tokens":300,"random_seed":7`,
		"Ollama":           `"max_tokens":300,"max_completion_tokens":300,"seed":7`,
		"OpenAICompatible": `"max_tokens":300,"max_completion_tokens":300,"seed":7`,
		"OpenAI":           `"max_completion_tokens":300,"seed":7`,
		"Azure":            `"max_completion_tokens":300,"seed":7`,
	} {
		f := newFake(t, reply{body: completion})
		m, err := openai.New(openai.Config{BaseURL: f.URL + "/v1", Model: "llama3.2", ProviderName: provider, APIKey: "k",
			Params: model.Params{MaxTokens: 300, Seed: ptr(int64(7))}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}); err != nil {
			t.Fatal(err)
		}
		assertJSON(t, f.only().body, `{"model":"llama3.2","messages":[{"role":"user","content":"hi"}],`+want+`}`)
	}
}

// Mistral's API refuses the fields it does not know (422 extra_forbidden):
// a stream asks for no stream_options (Mistral sends usage in its last
// chunk anyway), and the usage still arrives.
func TestStream_MistralGetsNoStreamOptions(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{events: []string{
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"mistral-large-latest","choices":[{"index":0,"delta":{"role":"assistant","content":"Bonjour"},"finish_reason":null}]}`,
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"mistral-large-latest","choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"total_tokens":9,"completion_tokens":2}}`,
	}})
	m, err := openai.New(openai.Config{APIKey: "k", BaseURL: f.URL + "/v1", Model: "mistral-large-latest", ProviderName: "Mistral"})
	if err != nil {
		t.Fatal(err)
	}
	var acc model.Accumulator
	for c, err := range m.Stream(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}) {
		if err != nil {
			t.Fatal(err)
		}
		acc.Add(c)
	}
	if strings.Contains(string(f.only().body), "stream_options") {
		t.Errorf("stream_options sent to Mistral: %s", f.only().body)
	}
	if r := acc.Response(); r.Message.Content != "Bonjour" || r.Usage.TotalTokens != 9 {
		t.Errorf("response %+v", r)
	}
}

func TestNew_RefusesUnsupportedParams(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]model.Params{
		"thinking_budget":  {ThinkingBudget: new(1024)},
		"include_thoughts": {IncludeThoughts: true},
	} {
		_, err := openai.New(openai.Config{APIKey: "k", Model: "gpt-4o", Params: p})
		if !errors.Is(err, model.ErrUnsupportedParam) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: New err = %v, want ErrUnsupportedParam naming it", name, err)
		}
	}
	_, err := openai.New(openai.Config{APIKey: "k", Model: "gpt-4o", Params: model.Params{ReasoningEffort: "extreme"}})
	if err == nil || !strings.Contains(err.Error(), "reasoning_effort") {
		t.Errorf("bad reasoning_effort accepted: %v", err)
	}
}

func TestParams_TimeoutBoundsTheCall(t *testing.T) {
	t.Parallel()
	f := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: "+chunkContent("Hel")+"\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(f.Close)
	m, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: f.URL + "/v1", Model: "gpt-4o-mini",
		Params: model.Params{Timeout: 150 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = drain(t, m, &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the timeout's context.DeadlineExceeded", err)
	}
}

func TestConfig_QueryParamsAndTokenSource(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{body: completion})
	calls := 0
	m, err := openai.New(openai.Config{BaseURL: f.URL + "/openai/deployments/gpt4o", Model: "gpt-4o",
		QueryParams: map[string]string{"api-version": "2024-10-21"},
		TokenSource: func(context.Context) (string, error) { calls++; return "aad-token-" + string(rune('0'+calls)), nil }})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := m.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}); err != nil {
			t.Fatal(err)
		}
	}
	reqs := f.requests()
	if reqs[0].path != "/openai/deployments/gpt4o/chat/completions" || reqs[0].query != "api-version=2024-10-21" {
		t.Errorf("endpoint %s?%s", reqs[0].path, reqs[0].query)
	}
	if a, b := reqs[0].header.Get("Authorization"), reqs[1].header.Get("Authorization"); a != "Bearer aad-token-1" || b != "Bearer aad-token-2" {
		t.Errorf("tokens %q, %q: each request must ask the token source", a, b)
	}
	failing, _ := openai.New(openai.Config{BaseURL: f.URL, Model: "m", TokenSource: func(context.Context) (string, error) { return "", errors.New("expired") }})
	if _, err := failing.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}); !errors.Is(err, model.ErrAuth) {
		t.Errorf("token failure err = %v, want ErrAuth", err)
	}
}

func TestUsage_OpenRouterCostIsKept(t *testing.T) {
	t.Parallel()
	f := newFake(t, reply{body: `{"id":"gen-1","model":"openai/gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12,"cost":0.00042}}`})
	r, err := newModel(t, f).Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Usage != (model.Usage{InputTokens: 10, OutputTokens: 2, TotalTokens: 12, Cost: 0.00042}) {
		t.Errorf("usage %+v", r.Usage)
	}
}
