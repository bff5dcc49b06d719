package anthropic

import (
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

func TestNew_ValidatesConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"model is required", Config{APIKey: "k"}, "Config.Model is required"},
		{"negative max tokens", Config{APIKey: "k", Model: "m", MaxTokens: -1}, "MaxTokens"},
		{"base URL without scheme", Config{APIKey: "k", Model: "m", BaseURL: "api.anthropic.com"}, "BaseURL"},
		{"base URL with another scheme", Config{APIKey: "k", Model: "m", BaseURL: "ftp://x"}, "BaseURL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestNew_AppliesDefaults(t *testing.T) {
	t.Parallel()
	m, err := New(Config{APIKey: "k", Model: "claude-sonnet-4-5", BaseURL: "http://127.0.0.1:9/", Beta: []string{" a ", "", "b"}})
	if err != nil {
		t.Fatal(err)
	}
	if m.endpoint != "http://127.0.0.1:9/v1/messages" || m.cfg.MaxTokens != DefaultMaxTokens || m.cfg.Version != DefaultVersion || m.beta != "a,b" || m.cfg.HTTPClient == nil {
		t.Errorf("defaults not applied: endpoint %q max %d version %q beta %q", m.endpoint, m.cfg.MaxTokens, m.cfg.Version, m.beta)
	}
	if got, want := m.Info(), (model.Info{ID: "claude-sonnet-4-5", Name: "Claude", Provider: "Anthropic"}); got != want {
		t.Errorf("Info = %+v, want %+v", got, want)
	}
}

// Not parallel: it changes the environment.
func TestNew_APIKeyFromEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "")
	if _, err := New(Config{Model: "m"}); err == nil || !strings.Contains(err.Error(), "ANTHROPIC_API_KEY") {
		t.Fatalf("err = %v, want one naming ANTHROPIC_API_KEY", err)
	}
	t.Setenv("ANTHROPIC_API_KEY", "sk-env")
	m, err := New(Config{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	if m.cfg.APIKey != "sk-env" {
		t.Errorf("APIKey = %q", m.cfg.APIKey)
	}
}
