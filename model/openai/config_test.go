package openai_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/openai"
)

// Not parallel: these tests set OPENAI_API_KEY.
func TestNew_ValidatesConfig(t *testing.T) {
	tests := []struct {
		name    string
		env     string
		cfg     openai.Config
		wantErr string
	}{
		{"model id is required", "sk-env", openai.Config{}, "Config.Model is required"},
		{"base URL must be absolute", "sk-env", openai.Config{Model: "m", BaseURL: "localhost:11434/v1"}, "absolute http(s) URL"},
		{"api.openai.com needs a key", "", openai.Config{Model: "gpt-4o"}, "OPENAI_API_KEY"},
		{"key from the environment", "sk-env", openai.Config{Model: "gpt-4o"}, ""},
		{"local server needs no key", "", openai.Config{Model: "llama3.2", BaseURL: "http://localhost:11434/v1"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OPENAI_API_KEY", tc.env)
			m, err := openai.New(tc.cfg)
			if tc.wantErr == "" {
				if err != nil || m == nil {
					t.Fatalf("New = %v, %v; want a model", m, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.wantErr)
			}
		})
	}
}

func TestNew_EnvironmentKeyStaysWithOpenAI(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	f := newFake(t, reply{body: completion}, reply{body: completion})
	// Another server does not get the environment's key...
	m, err := openai.New(openai.Config{BaseURL: f.URL + "/v1", Model: "gpt-4o-mini"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Invoke(context.Background(), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	// ...but does get a key passed explicitly.
	m, err = openai.New(openai.Config{BaseURL: f.URL + "/v1", Model: "gpt-4o-mini", APIKey: "sk-explicit"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Invoke(context.Background(), userReq("hi")); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d requests", len(reqs))
	}
	if got := reqs[0].header.Get("Authorization"); got != "" {
		t.Fatalf("Authorization to a non-OpenAI server = %q, want none (the environment's key stays with api.openai.com)", got)
	}
	if got := reqs[1].header.Get("Authorization"); got != "Bearer sk-explicit" {
		t.Fatalf("Authorization = %q, want the explicit key", got)
	}
}

func TestBaseURL_OllamaStyleServer(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	f := newFake(t,
		reply{events: []string{
			`{"id":"chatcmpl-417","object":"chat.completion.chunk","created":1733011200,"model":"llama3.2","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}`,
			`{"id":"chatcmpl-417","object":"chat.completion.chunk","created":1733011200,"model":"llama3.2","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}`,
			`{"id":"chatcmpl-417","object":"chat.completion.chunk","created":1733011200,"model":"llama3.2","system_fingerprint":"fp_ollama","choices":[],"usage":{"prompt_tokens":26,"completion_tokens":2,"total_tokens":28}}`,
		}},
		reply{status: 404, body: `{"error":{"message":"model \"llama9\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`},
	)
	m, err := openai.New(openai.Config{BaseURL: f.URL + "/v1/", Model: "llama3.2", ProviderName: "Ollama"})
	if err != nil {
		t.Fatal(err)
	}
	if info := m.Info(); info != (model.Info{ID: "llama3.2", Name: "OpenAILike", Provider: "Ollama"}) {
		t.Errorf("Info = %+v", info)
	}
	_, resp, err := drain(t, m, userReq("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Content != "Hi" || resp.Usage.TotalTokens != 28 || resp.ModelID != "llama3.2" {
		t.Errorf("response = %+v", resp)
	}
	_, err = m.Invoke(context.Background(), userReq("hello"))
	var pe *model.ProviderError
	if !errors.As(err, &pe) || pe.Provider != "Ollama" || !strings.Contains(err.Error(), "try pulling it first") {
		t.Errorf("err = %v, want an Ollama provider error with its message", err)
	}
	reqs := f.requests()
	for _, r := range reqs {
		if r.path != "/v1/chat/completions" {
			t.Errorf("path = %q, want /v1/chat/completions", r.path)
		}
		if h := r.header.Get("Authorization"); h != "" {
			t.Errorf("Authorization = %q, want none without a key", h)
		}
	}
}

func TestInfo_DefaultsToOpenAI(t *testing.T) {
	t.Parallel()
	m, err := openai.New(openai.Config{APIKey: "k", Model: "gpt-4o"})
	if err != nil {
		t.Fatal(err)
	}
	if info := m.Info(); info != (model.Info{ID: "gpt-4o", Name: "OpenAIChat", Provider: "OpenAI"}) {
		t.Fatalf("Info = %+v", info)
	}
}
