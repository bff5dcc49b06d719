package modelspec

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/modeltest"
	"github.com/agentryhq/agentry/model/openai/openaitest"
)

func TestParse_RejectsMalformedSpecs(t *testing.T) {
	t.Parallel()
	for _, spec := range []string{"", "openai", ":gpt", "openai:", "nope:model", "  :  "} {
		if _, _, err := Parse(spec); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("Parse(%q) err = %v, want ErrInvalidSpec", spec, err)
		}
	}
}

func TestParse_SplitsProviderAndID(t *testing.T) {
	t.Parallel()
	p, id, err := Parse(" OpenAI:gpt-4o-mini ")
	if err != nil || p != "openai" || id != "gpt-4o-mini" {
		t.Fatalf("got %q %q %v", p, id, err)
	}
	// ids may contain colons (ollama tags).
	p, id, err = Parse("ollama:llama3.2:1b")
	if err != nil || p != "ollama" || id != "llama3.2:1b" {
		t.Fatalf("got %q %q %v", p, id, err)
	}
}

func TestNew_BuildsEachProvider(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	t.Setenv("OLLAMA_HOST", "127.0.0.1:11434")
	script := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(script, []byte("turns:\n  - content: hi there\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ spec, provider, id string }{
		{"openai:gpt-4o-mini", "OpenAI", "gpt-4o-mini"},
		{"anthropic:claude-sonnet-4-5", "Anthropic", "claude-sonnet-4-5"},
		{"ollama:llama3.2", "Ollama", "llama3.2"},
		{"scripted:" + script, "Scripted", "scripted"},
	}
	for _, tc := range tests {
		m, err := New(tc.spec, Options{})
		if err != nil {
			t.Fatalf("New(%q): %v", tc.spec, err)
		}
		if info := m.Info(); info.Provider != tc.provider || info.ID != tc.id {
			t.Errorf("New(%q).Info() = %+v, want provider %s id %s", tc.spec, info, tc.provider, tc.id)
		}
	}
	m, err := New("scripted:"+script, Options{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Invoke(context.Background(), &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hello")}})
	if err != nil || resp.Message.Content != "hi there" {
		t.Fatalf("scripted reply = %+v, %v", resp, err)
	}
}

func TestNew_OpenAICompatibleNeedsBaseURL(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "")
	if _, err := New("openai-compatible:qwen", Options{}); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("err = %v, want ErrInvalidSpec", err)
	}
	m, err := New("openai-compatible:qwen", Options{BaseURL: "http://127.0.0.1:8000/v1"})
	if err != nil || m.Info().ID != "qwen" {
		t.Fatalf("got %v, %v", m, err)
	}
}

func TestNew_MissingScriptFails(t *testing.T) {
	t.Parallel()
	if _, err := New("scripted:/nonexistent/script.yaml", Options{}); err == nil {
		t.Fatal("want error for a missing script file")
	}
}

func TestNew_PresetsSendTheirKeyToTheirServer(t *testing.T) {
	var (
		mu   sync.Mutex
		auth []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(srv.Close)
	for name, p := range Presets {
		t.Setenv(p.KeyEnv, "key-"+name)
	}
	t.Setenv("LITELLM_API_KEY", "")
	hi := &model.Request{Messages: []model.Message{model.Text(model.RoleUser, "hi")}}
	for name, p := range Presets {
		m, err := New(name+":some-model", Options{BaseURL: srv.URL + "/v1", NoRetry: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if info := m.Info(); info.Provider != p.Name || info.ID != "some-model" {
			t.Errorf("%s: info %+v", name, info)
		}
		if _, err := m.Invoke(context.Background(), hi); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		mu.Lock()
		got := auth[len(auth)-1]
		mu.Unlock()
		want := "/v1/chat/completions Bearer key-" + name
		if p.KeyOptional {
			want = "/v1/chat/completions "
		}
		if got != want {
			t.Errorf("%s: server saw %q, want %q", name, got, want)
		}
	}
	t.Setenv("GROQ_API_KEY", "")
	if _, err := New("groq:llama-3.3-70b-versatile", Options{}); !errors.Is(err, model.ErrNoAPIKey) || !strings.Contains(err.Error(), "GROQ_API_KEY") {
		t.Errorf("missing key: %v", err)
	}
}

func TestNew_ProvidersAndParams(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "k")
	t.Setenv("GOOGLE_API_KEY", "k")
	t.Setenv("GOOGLE_GENAI_USE_VERTEXAI", "")
	t.Setenv("AZURE_OPENAI_API_KEY", "k")
	t.Setenv("ANTHROPIC_API_KEY", "k")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "AKID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	tests := []struct{ spec, base, name, provider string }{
		{"openai-responses:o4-mini", "", "OpenAIResponses", "OpenAI"},
		{"openai-chat:gpt-4o", "", "OpenAIChat", "OpenAI"},
		{"google:gemini-2.5-flash", "", "Gemini", "Google"},
		{"azure-openai:gpt-4o", "https://r.openai.azure.com", "AzureOpenAI", "Azure"},
		{"aws-bedrock:amazon.nova-pro-v1:0", "", "AwsBedrock", "AwsBedrock"},
	}
	for _, tc := range tests {
		m, err := New(tc.spec, Options{BaseURL: tc.base, NoRetry: true})
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		if info := m.Info(); info.Name != tc.name || info.Provider != tc.provider {
			t.Errorf("%s: info %+v", tc.spec, info)
		}
	}
	seed := int64(1)
	if _, err := New("anthropic:claude-sonnet-4-5", Options{Params: model.Params{Seed: &seed}}); !errors.Is(err, model.ErrUnsupportedParam) {
		t.Errorf("seed on anthropic: %v", err)
	}
	if _, err := New("scripted:x.yaml", Options{Params: model.Params{Seed: &seed}}); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("params on scripted: %v", err)
	}
}

// A preset is the OpenAI provider on another base URL; it passes the same suite.
func TestConformance_Preset(t *testing.T) {
	t.Parallel()
	modeltest.Run(t, modeltest.Provider{
		New: func(t *testing.T, base string, client *http.Client) model.Model {
			m, err := New("litellm:gpt-4o-mini", Options{BaseURL: base + "/v1", NoRetry: true, HTTPClient: client})
			if err != nil {
				t.Fatal(err)
			}
			return m
		},
		Reply: openaitest.Reply,
		Usage: openaitest.Usage,
	})
}

// A provider without its key names the environment variable that gives it:
// the user of the CLI or a config file cannot set a Go config field.
func TestNew_AMissingKeyNamesItsVariable(t *testing.T) {
	for _, v := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY", "AZURE_OPENAI_API_KEY", "OPENAI_BASE_URL"} {
		t.Setenv(v, "")
	}
	for _, p := range Presets {
		t.Setenv(p.KeyEnv, "")
	}
	t.Setenv("AZURE_OPENAI_ENDPOINT", "https://example.openai.azure.com")
	want := map[string]string{
		"openai": "OPENAI_API_KEY", "openai-chat": "OPENAI_API_KEY", "openai-responses": "OPENAI_API_KEY",
		"anthropic": "ANTHROPIC_API_KEY", "google": "GOOGLE_API_KEY", "gemini": "GOOGLE_API_KEY",
		"azure-openai": "AZURE_OPENAI_API_KEY",
	}
	for name, p := range Presets {
		if !p.KeyOptional {
			want[name] = p.KeyEnv
		}
	}
	for provider, env := range want {
		_, err := New(provider+":m", Options{NoRetry: true})
		var mk *MissingKeyError
		if !errors.As(err, &mk) || !errors.Is(err, model.ErrNoAPIKey) || !strings.Contains(err.Error(), "set "+env) {
			t.Errorf("%s without a key: %v, want a MissingKeyError naming %s", provider, err, env)
		}
	}
}
