package config

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/run"
)

// fakeChat is a loopback Chat Completions server answering with status and body.
func fakeChat(t *testing.T, status int, body string) (*httptest.Server, func() []map[string]any) {
	t.Helper()
	var (
		mu     sync.Mutex
		bodies []map[string]any
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		mu.Lock()
		bodies = append(bodies, m)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []map[string]any { mu.Lock(); defer mu.Unlock(); return append([]map[string]any(nil), bodies...) }
}

const okCompletion = `{"id":"c","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

func TestAgentModel_ParametersFromYAMLReachTheProvider(t *testing.T) {
	t.Parallel()
	srv, bodies := fakeChat(t, 200, okCompletion)
	decl, err := parseAgent([]byte(`
id: tuned
model:
  id: openai-compatible:gpt-4o-mini
  base_url: `+srv.URL+`/v1
  temperature: 0.2
  top_p: 0.9
  max_tokens: 300
  stop: END
  seed: 7
  presence_penalty: 0.5
  frequency_penalty: 0.25
  reasoning_effort: low
  response_format: json_object
  timeout: 30s
  extra_headers: {X-Team: blue}
  extra_body: {service_tier: flex}
`), "tuned.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, err := decl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), run.TextInput("hi")); err != nil {
		t.Fatal(err)
	}
	got := bodies()[0]
	for k, want := range map[string]any{"temperature": 0.2, "top_p": 0.9, "max_completion_tokens": 300.0, "seed": 7.0,
		"presence_penalty": 0.5, "frequency_penalty": 0.25, "reasoning_effort": "low", "service_tier": "flex"} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if s, _ := json.Marshal(got["stop"]); string(s) != `["END"]` {
		t.Errorf("stop = %s", s)
	}
	if rf, _ := json.Marshal(got["response_format"]); string(rf) != `{"type":"json_object"}` {
		t.Errorf("response_format = %s", rf)
	}
	if decl.Model.Params.Timeout != 30*time.Second || decl.Model.Params.ExtraHeaders["X-Team"] != "blue" {
		t.Errorf("params %+v", decl.Model.Params)
	}
}

// thinking_budget: 0 is kept as 0 (no thinking), not taken for "not set".
func TestAgentModel_ThinkingBudgetZeroIsKept(t *testing.T) {
	t.Parallel()
	decl, err := parseAgent([]byte("id: flash\nmodel:\n  id: gemini:gemini-2.5-flash\n  thinking_budget: 0\n"), "flash.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if b := decl.Model.Params.ThinkingBudget; b == nil || *b != 0 {
		t.Fatalf("thinking_budget = %v, want 0", b)
	}
}

func TestAgentModel_BadParametersAreRefusedAtStart(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "k")
	tests := []struct {
		name, yaml, want string
		build            bool
	}{
		{"unknown key", "model:\n  id: openai:gpt-4o\n  temprature: 1\n", `tuned.yaml:3: model: unknown key "temprature" in the model mapping: did you mean "temperature"?`, false},
		{"bad timeout", "model:\n  id: openai:gpt-4o\n  timeout: soon\n", "model.timeout", false},
		{"bad response format", "model:\n  id: openai:gpt-4o\n  response_format: yaml\n", "json_object", false},
		{"no id", "model:\n  temperature: 1\n", "id is required", false},
		{"seed on anthropic", "model:\n  id: anthropic:claude-sonnet-4-5\n  seed: 3\n", "parameter not supported by this provider: seed", true},
		{"params on a scripted model", "model:\n  id: scripted:x.yaml\n  temperature: 0.1\n", "scripted models take no parameters", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			decl, err := parseAgent([]byte(tc.yaml), "tuned.yaml")
			if tc.build {
				if err != nil {
					t.Fatal(err)
				}
				_, err = decl.Build(nil)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestAgentModel_ProviderAndIDApartAndStringForm(t *testing.T) {
	t.Parallel()
	decl, err := parseAgent([]byte("model:\n  provider: groq\n  id: llama-3.3-70b-versatile\n  temperature: 0\nfallback_models:\n  - openai:gpt-4o-mini\n  - id: anthropic:claude-sonnet-4-5\n    max_tokens: 100\n"), "a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if decl.Model.Spec != "groq:llama-3.3-70b-versatile" || decl.Model.Params.Temperature == nil || *decl.Model.Params.Temperature != 0 {
		t.Errorf("model %+v", decl.Model)
	}
	if len(decl.FallbackModels) != 2 || decl.FallbackModels[0].Spec != "openai:gpt-4o-mini" || decl.FallbackModels[1].Params.MaxTokens != 100 {
		t.Errorf("fallback_models %+v", decl.FallbackModels)
	}
}

func TestAgentModel_FallbackModelsAnswerWhenThePrimaryFails(t *testing.T) {
	t.Parallel()
	srv, _ := fakeChat(t, 400, `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`)
	script := filepath.Join(t.TempDir(), "s.yaml")
	if err := writeScript(script); err != nil {
		t.Fatal(err)
	}
	decl, err := parseAgent([]byte("id: fb\nmodel:\n  id: openai-compatible:small\n  base_url: "+srv.URL+"/v1\nfallback_models: [\"scripted:"+script+"\"]\n"), "fb.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, err := decl.Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := a.Run(context.Background(), run.TextInput("hi"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Content != "ok" || out.Model != "scripted" || out.ModelProvider != "Scripted" {
		t.Errorf("content %v model %s/%s", out.Content, out.ModelProvider, out.Model)
	}
}

func TestLoad_ModelMappingInTheOSFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "os.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("agents:\n  - id: a\n    model:\n      id: openai:gpt-4o\n      max_tokens: 50\n    fallback_models: [anthropic:claude-sonnet-4-5]\n")
	cfg, err := Load(path, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agents[0].Model.Spec != "openai:gpt-4o" || cfg.Agents[0].Model.Params.MaxTokens != 50 || cfg.Agents[0].FallbackModels[0].Spec != "anthropic:claude-sonnet-4-5" {
		t.Errorf("agent %+v", cfg.Agents[0])
	}
	write("agents:\n  - id: a\n    model:\n      id: openai:gpt-4o\n      maxtokens: 50\n")
	if _, err := Load(path, env(nil)); err == nil || !strings.Contains(err.Error(), `os.yaml:5: agents[0].model: unknown key "maxtokens" in the model mapping: did you mean "max_tokens"?`) {
		t.Errorf("err = %v", err)
	}
}

// parseAgent reads a one-agent file through the loader's Parse.
func parseAgent(data []byte, filename string) (Agent, error) {
	cfg, err := Parse(data, filename)
	if err != nil {
		return Agent{}, err
	}
	if len(cfg.Agents) != 1 {
		return Agent{}, fmt.Errorf("want one agent, got %d", len(cfg.Agents))
	}
	return cfg.Agents[0], nil
}

// A model's timeout in seconds and openai_moderation's timeout were
// converted unchecked: 1e300 and -5 became an implementation-specific or
// negative duration and were accepted.
func TestParse_TimeoutSecondsMustBeADuration(t *testing.T) {
	t.Parallel()
	for _, yml := range []string{
		"agents: [{id: a, model: {id: 'openai:x', timeout: 1e300}}]\n",
		"agents: [{id: a, model: {id: 'openai:x', timeout: -5}}]\n",
		"agents: [{id: a, model: {id: 'openai:x', timeout: -5s}}]\n",
		"agents: [{id: a, model: 'openai:x', pre_hooks: [{name: openai_moderation, options: {api_key: k, timeout: 1e300}}]}]\n",
		"agents: [{id: a, model: 'openai:x', pre_hooks: [{name: openai_moderation, options: {api_key: k, timeout: -5}}]}]\n",
	} {
		cfg, err := Parse([]byte(yml), "os.yaml")
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), "timeout") {
			t.Errorf("%q: %v", yml, err)
		}
	}
}
