package modelspec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/model"
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
