package modelspec

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/anthropic"
	"github.com/agentryhq/agentry/model/openai"
	"github.com/agentryhq/agentry/model/scripted"
)

// ErrInvalidSpec is returned for a malformed or unknown model spec.
var ErrInvalidSpec = errors.New("invalid model spec")

// MissingKeyError is returned when a model needs an API key and neither its
// environment variable nor a config gives one. It unwraps to model.ErrNoAPIKey.
type MissingKeyError struct {
	Spec   string // the model spec, e.g. "openai:gpt-4o-mini"
	EnvVar string // the variable that would provide the key
}

func (e *MissingKeyError) Error() string {
	return fmt.Sprintf("model %s needs an API key: set %s in the environment", e.Spec, e.EnvVar)
}

func (e *MissingKeyError) Unwrap() error { return model.ErrNoAPIKey }

// Providers lists the accepted provider prefixes.
var Providers = []string{"openai", "anthropic", "ollama", "openai-compatible", "scripted"}

// Options tune how a spec is built.
type Options struct {
	// BaseURL overrides the provider's API root (openai, anthropic, ollama,
	// openai-compatible). Empty: the provider default, or for ollama the
	// OLLAMA_HOST environment variable or http://localhost:11434.
	BaseURL string
	// Retry wraps network providers with model.WithRetry; the zero value uses
	// its defaults. Scripted models are never wrapped.
	Retry model.RetryConfig
	// NoRetry disables the retry wrapper.
	NoRetry bool
}

// Parse splits "provider:id" and validates the provider.
func Parse(spec string) (provider, id string, err error) {
	provider, id, ok := strings.Cut(strings.TrimSpace(spec), ":")
	provider = strings.ToLower(strings.TrimSpace(provider))
	id = strings.TrimSpace(id)
	if !ok || provider == "" || id == "" {
		return "", "", fmt.Errorf("%w %q: write provider:model, e.g. openai:gpt-4o-mini (providers: %s)",
			ErrInvalidSpec, spec, strings.Join(Providers, ", "))
	}
	for _, p := range Providers {
		if p == provider {
			return provider, id, nil
		}
	}
	return "", "", fmt.Errorf("%w %q: unknown provider %q (providers: %s)", ErrInvalidSpec, spec, provider, strings.Join(Providers, ", "))
}

// New builds the model a spec names. For "scripted" the id is the path of a
// script file (YAML or JSON).
func New(spec string, opts Options) (model.Model, error) {
	provider, id, err := Parse(spec)
	if err != nil {
		return nil, err
	}
	var m model.Model
	switch provider {
	case "scripted":
		return scripted.Load(id)
	case "openai":
		m, err = openai.New(openai.Config{Model: id, BaseURL: opts.BaseURL})
	case "openai-compatible":
		base := opts.BaseURL
		if base == "" {
			base = os.Getenv("OPENAI_BASE_URL")
		}
		if base == "" {
			return nil, fmt.Errorf("%w %q: openai-compatible needs a base URL (flag or OPENAI_BASE_URL)", ErrInvalidSpec, spec)
		}
		// The user pointed OPENAI_BASE_URL (or the flag) here, so the
		// environment's key is meant for this server.
		m, err = openai.New(openai.Config{Model: id, BaseURL: base, APIKey: os.Getenv("OPENAI_API_KEY"), ProviderName: "OpenAICompatible"})
	case "ollama":
		base := opts.BaseURL
		if base == "" {
			base = os.Getenv("OLLAMA_HOST")
		}
		if base == "" {
			base = "http://localhost:11434"
		}
		if !strings.Contains(base, "://") {
			base = "http://" + base
		}
		base = strings.TrimSuffix(strings.TrimSuffix(base, "/"), "/v1") + "/v1"
		m, err = openai.New(openai.Config{Model: id, BaseURL: base, ProviderName: "Ollama"})
	case "anthropic":
		m, err = anthropic.New(anthropic.Config{Model: id, BaseURL: opts.BaseURL})
	}
	if errors.Is(err, model.ErrNoAPIKey) {
		// The providers' own message names their Go config field; a CLI or
		// config file user can only set the environment variable.
		env := map[string]string{"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}[provider]
		return nil, &MissingKeyError{Spec: strings.TrimSpace(spec), EnvVar: env}
	}
	if err != nil {
		return nil, err
	}
	if opts.NoRetry {
		return m, nil
	}
	return model.WithRetry(m, opts.Retry), nil
}
