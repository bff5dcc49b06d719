package modelspec

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/anthropic"
	"github.com/agentryhq/agentry/model/azure"
	"github.com/agentryhq/agentry/model/bedrock"
	"github.com/agentryhq/agentry/model/gemini"
	"github.com/agentryhq/agentry/model/openai"
	"github.com/agentryhq/agentry/model/openai/responses"
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

// Providers lists the accepted provider prefixes (Agno's names where Agno
// has them): the providers, then the OpenAI-compatible presets.
var Providers = []string{"openai", "openai-chat", "openai-responses", "anthropic", "google", "gemini", "vertexai",
	"azure-openai", "aws-bedrock", "ollama", "openai-compatible", "scripted",
	"groq", "together", "openrouter", "deepseek", "mistral", "xai", "fireworks", "litellm"}

// keyEnv names the environment variables that give each provider its API key,
// for the message of a missing key (the presets name theirs in Presets).
var keyEnv = map[string]string{
	"openai": "OPENAI_API_KEY", "openai-chat": "OPENAI_API_KEY", "openai-responses": "OPENAI_API_KEY",
	"anthropic": "ANTHROPIC_API_KEY", "google": "GOOGLE_API_KEY or GEMINI_API_KEY", "gemini": "GOOGLE_API_KEY or GEMINI_API_KEY",
	"azure-openai": "AZURE_OPENAI_API_KEY",
}

// Preset is an OpenAI-compatible service a spec names: only its API root and
// the environment variable holding its key differ from OpenAI.
type Preset struct {
	Name    string // provider name in runs, as Agno reports it
	BaseURL string
	KeyEnv  string
	// KeyOptional: a LiteLLM proxy may run without keys.
	KeyOptional bool
}

// Presets are the OpenAI-compatible services Agno users reach by name.
var Presets = map[string]Preset{
	"groq":       {Name: "Groq", BaseURL: "https://api.groq.com/openai/v1", KeyEnv: "GROQ_API_KEY"},
	"together":   {Name: "Together", BaseURL: "https://api.together.xyz/v1", KeyEnv: "TOGETHER_API_KEY"},
	"openrouter": {Name: "OpenRouter", BaseURL: "https://openrouter.ai/api/v1", KeyEnv: "OPENROUTER_API_KEY"},
	"deepseek":   {Name: "DeepSeek", BaseURL: "https://api.deepseek.com", KeyEnv: "DEEPSEEK_API_KEY"},
	"mistral":    {Name: "Mistral", BaseURL: "https://api.mistral.ai/v1", KeyEnv: "MISTRAL_API_KEY"},
	"xai":        {Name: "xAI", BaseURL: "https://api.x.ai/v1", KeyEnv: "XAI_API_KEY"},
	"fireworks":  {Name: "Fireworks", BaseURL: "https://api.fireworks.ai/inference/v1", KeyEnv: "FIREWORKS_API_KEY"},
	"litellm":    {Name: "LiteLLM", BaseURL: "http://0.0.0.0:4000", KeyEnv: "LITELLM_API_KEY", KeyOptional: true},
}

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
	// Params are the model's generation settings; a provider that cannot take
	// one refuses it (model.ErrUnsupportedParam).
	Params model.Params
	// HTTPClient is the client network providers send with (nil: each
	// provider's default). Scripted models make no requests.
	HTTPClient *http.Client
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
	if slices.Contains(Providers, provider) {
		return provider, id, nil
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
	params := opts.Params
	switch provider {
	case "scripted":
		if set := params.Set(); len(set) > 0 {
			return nil, fmt.Errorf("%w %q: scripted models take no parameters (%s)", ErrInvalidSpec, spec, strings.Join(set, ", "))
		}
		return scripted.Load(id)
	case "openai", "openai-chat":
		m, err = openai.New(openai.Config{Model: id, BaseURL: opts.BaseURL, Params: params, HTTPClient: opts.HTTPClient})
	case "openai-responses":
		m, err = responses.New(responses.Config{Model: id, BaseURL: opts.BaseURL, Params: params, HTTPClient: opts.HTTPClient})
	case "google", "gemini", "vertexai":
		m, err = gemini.New(gemini.Config{Model: id, BaseURL: opts.BaseURL, Vertex: provider == "vertexai", Params: params, HTTPClient: opts.HTTPClient})
	case "azure-openai":
		m, err = azure.New(azure.Config{Model: id, Endpoint: opts.BaseURL, Params: params, HTTPClient: opts.HTTPClient})
	case "aws-bedrock":
		m, err = bedrock.New(context.Background(), bedrock.Config{Model: id, BaseURL: opts.BaseURL, Params: params, HTTPClient: opts.HTTPClient})
	case "groq", "together", "openrouter", "deepseek", "mistral", "xai", "fireworks", "litellm":
		pre := Presets[provider]
		base := opts.BaseURL
		if base == "" {
			base = pre.BaseURL
		}
		key := os.Getenv(pre.KeyEnv)
		if key == "" && !pre.KeyOptional {
			return nil, &MissingKeyError{Spec: strings.TrimSpace(spec), EnvVar: pre.KeyEnv}
		}
		m, err = openai.New(openai.Config{Model: id, BaseURL: base, APIKey: key, ProviderName: pre.Name, Name: pre.Name, Params: params, HTTPClient: opts.HTTPClient})
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
		m, err = openai.New(openai.Config{Model: id, BaseURL: base, APIKey: os.Getenv("OPENAI_API_KEY"), ProviderName: "OpenAICompatible", Params: params, HTTPClient: opts.HTTPClient})
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
		m, err = openai.New(openai.Config{Model: id, BaseURL: base, ProviderName: "Ollama", Params: params, HTTPClient: opts.HTTPClient})
	case "anthropic":
		m, err = anthropic.New(anthropic.Config{Model: id, BaseURL: opts.BaseURL, Params: params, HTTPClient: opts.HTTPClient})
	}
	if errors.Is(err, model.ErrNoAPIKey) {
		// The providers' own message names their Go config field; a CLI or
		// config file user can only set the environment variable.
		if env := keyEnv[provider]; env != "" {
			return nil, &MissingKeyError{Spec: strings.TrimSpace(spec), EnvVar: env}
		}
	}
	if err != nil {
		return nil, err
	}
	if opts.NoRetry {
		return m, nil
	}
	return model.WithRetry(m, opts.Retry), nil
}
