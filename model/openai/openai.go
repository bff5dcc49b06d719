package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/openai/internal/apiroot"
)

// DefaultBaseURL is OpenAI's API root.
const DefaultBaseURL = apiroot.Default

// maxErrorBody bounds how much of an error response is read.
const maxErrorBody = 64 << 10

// maxResponseBody bounds a non-streaming answer; a larger one is treated as malformed.
const maxResponseBody = 32 << 20

// Config configures a Model. Only Model is required.
type Config struct {
	// APIKey is sent as a Bearer token. Empty means the OPENAI_API_KEY
	// environment variable for api.openai.com, and no key for any other base
	// URL (Ollama, a local vLLM): the environment's secret never reaches a
	// server the caller did not give it to.
	APIKey string
	// BaseURL is the API root, default DefaultBaseURL. Point it at any
	// OpenAI-compatible server, e.g. http://localhost:11434/v1 for Ollama.
	BaseURL string
	// Model is the model id, e.g. "gpt-4o-mini" or "llama3.2".
	Model string
	// HTTPClient defaults to http.DefaultClient. Give it no overall Timeout:
	// streams last as long as the answer; use ctx to bound a call.
	HTTPClient *http.Client
	// Organization is sent as OpenAI-Organization when set.
	Organization string
	// Headers are added to every request and override the defaults, so a
	// gateway's own auth header can replace Authorization.
	Headers map[string]string
	// ProviderName names the provider in Info and errors; default "OpenAI".
	// It also picks the wire's variants: a server other than "OpenAI" and
	// "Azure" gets max_tokens besides max_completion_tokens ("Mistral",
	// which refuses fields it does not know, gets max_tokens only, the seed
	// as random_seed and no stream_options), and "DeepSeek"
	// gets assistant turns' reasoning_content back (its thinking mode
	// refuses a tool-call turn without it). A history's tool call ids that
	// "OpenAI", "Azure" (over 40 characters) or "Mistral" (not 9 letters
	// and digits) refuse are sent mapped.
	ProviderName string
	// Params are the generation settings sent with every call (a Request's
	// own fields override them). Chat Completions takes all but
	// thinking_budget and include_thoughts; New refuses those. max_tokens
	// is sent as max_completion_tokens, and to a server other than OpenAI
	// and Azure (ProviderName) as max_tokens too (see ProviderName).
	Params model.Params
	// QueryParams are added to the endpoint URL (Azure's api-version).
	QueryParams map[string]string
	// TokenSource, when set, supplies the Bearer token of each request
	// instead of APIKey (Azure Entra ID / AAD tokens, which expire).
	TokenSource func(ctx context.Context) (string, error)
	// Name is the model class name in Info; default "OpenAIChat", or
	// "OpenAILike" for a server other than api.openai.com.
	Name string
}

// Supported lists the parameters Chat Completions takes.
var Supported = []string{
	model.ParamTemperature, model.ParamTopP, model.ParamMaxTokens, model.ParamStop, model.ParamSeed,
	model.ParamPresencePenalty, model.ParamFrequencyPenalty, model.ParamReasoningEffort,
	model.ParamResponseFormat, model.ParamToolChoice, model.ParamParallelToolCalls,
	model.ParamTimeout, model.ParamExtraHeaders, model.ParamExtraBody,
}

// Model is a Chat Completions model. It is immutable after New and safe for
// concurrent use.
type Model struct {
	endpoint string
	apiKey   string
	org      string
	headers  map[string]string
	client   *http.Client
	info     model.Info
	params   model.Params
	tokens   func(ctx context.Context) (string, error)
}

var _ model.Model = (*Model)(nil)

// New validates cfg and returns a Model.
func New(cfg Config) (*Model, error) {
	root, err := apiroot.Resolve("openai", cfg.Model, cfg.BaseURL, cfg.APIKey, cfg.TokenSource != nil)
	if err != nil {
		return nil, err
	}
	official, key := root.Official, root.Key
	provider := cfg.ProviderName
	if provider == "" {
		provider = "OpenAI"
	}
	if err := cfg.Params.Check(provider, Supported...); err != nil {
		return nil, err
	}
	name := cfg.Name
	if name == "" {
		name = "OpenAIChat"
		if !official {
			name = "OpenAILike"
		}
	}
	client := cfg.HTTPClient
	if client == nil {
		client = http.DefaultClient
	}
	headers := make(map[string]string, len(cfg.Headers))
	for k, v := range cfg.Headers {
		headers[k] = v
	}
	for k, v := range cfg.Params.ExtraHeaders {
		headers[k] = v
	}
	endpoint := root.Base + "/chat/completions"
	if len(cfg.QueryParams) > 0 {
		q := url.Values{}
		for k, v := range cfg.QueryParams {
			q.Set(k, v)
		}
		endpoint += "?" + q.Encode()
	}
	return &Model{
		endpoint: endpoint,
		params:   cfg.Params,
		tokens:   cfg.TokenSource,
		apiKey:   key,
		org:      cfg.Organization,
		headers:  headers,
		client:   client,
		info:     model.Info{ID: cfg.Model, Name: name, Provider: provider},
	}, nil
}

// Info names the model.
func (m *Model) Info() model.Info { return m.info }

// post sends body to the chat completions endpoint and returns the response
// when its status is 2xx, with the credentials it sent (for the caller to
// keep out of any quote of the answer); any other status becomes a
// classified *model.ProviderError.
func (m *Model) post(ctx context.Context, body []byte, stream bool) (*http.Response, []string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("openai: building request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	// secrets are the credentials sent, kept out of error messages: the
	// key, a token, and the configured headers' values (Azure's api-key, a
	// gateway's own auth header).
	secrets := append([]string{m.apiKey}, slices.Collect(maps.Values(m.headers))...)
	switch {
	case m.tokens != nil:
		tok, err := m.tokens(ctx)
		if err != nil {
			// A call cancelled while the token was on its way is the
			// caller's doing, not a credential the provider refused.
			if ctx.Err() != nil {
				return nil, nil, fmt.Errorf("openai: %w", ctx.Err())
			}
			return nil, nil, fmt.Errorf("openai: getting a bearer token: %w: %w", model.ErrAuth, err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		secrets = append(secrets, tok)
	case m.apiKey != "":
		req.Header.Set("Authorization", "Bearer "+m.apiKey)
	}
	if m.org != "" {
		req.Header.Set("OpenAI-Organization", m.org)
	}
	for k, v := range m.headers {
		req.Header.Set(k, v)
	}
	resp, err := m.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("openai: %w", ctx.Err())
		}
		// No answer at all: not a server error, since no server was reached.
		return nil, nil, model.Unreachable(m.info.Provider, m.endpoint, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, secrets, nil
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return nil, nil, m.statusError(resp.StatusCode, resp.Header, model.RedactSecrets(data, secrets...))
}

// statusError classifies a non-2xx answer from its status and error body.
func (m *Model) statusError(status int, h http.Header, body []byte) *model.ProviderError {
	var env errorEnvelope
	msg := ""
	if json.Unmarshal(body, &env) == nil {
		if e := env.err(); e != nil {
			msg = e.String()
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		msg = clip.Mark(msg, model.MaxErrorMessage, "…")
		if msg == "" {
			msg = http.StatusText(status)
		}
	}
	return model.ClassifyHTTP(m.info.Provider, status, h, msg)
}

// streamError classifies an error object sent inside a 200 answer, where the
// status says nothing: the error's type and code decide the kind.
func (m *Model) streamError(e *wireError) *model.ProviderError {
	if status, err := strconv.Atoi(e.Code); err == nil && status >= 400 && status <= 599 {
		// A numeric code is the HTTP status the error stands for (OpenRouter
		// sends an error met while the model was answering in a 200 so).
		pe := model.ClassifyHTTP(m.info.Provider, status, nil, e.String())
		pe.StatusCode = 0 // the answer's own status was 2xx
		return pe
	}
	pe := model.ClassifyHTTP(m.info.Provider, 0, nil, e.String())
	kind := strings.ToLower(e.Type + " " + e.Code)
	switch {
	case pe.Kind == model.ErrContextLength:
	case strings.Contains(kind, "rate_limit"):
		pe.Kind = model.ErrRateLimit
	case strings.Contains(kind, "server_error") || strings.Contains(kind, "overloaded") ||
		strings.Contains(kind, "api_error") || strings.Contains(kind, "internal"):
		pe.Kind = model.ErrServer
	case strings.Contains(kind, "authentication") || strings.Contains(kind, "invalid_api_key"):
		pe.Kind = model.ErrAuth
	}
	return pe
}

// filtered is the error of an answer the content filter stopped before any
// content (finish_reason "content_filter", as OpenAI and Azure OpenAI send
// it): nothing else reads a stop reason, and the run would complete empty.
// An answer cut after some content keeps it, with the stop reason.
func (m *Model) filtered() error {
	return model.Blocked(m.info.Provider, "stopped by the content filter (finish_reason content_filter)", "rephrase the prompt")
}

// errorEnvelope matches OpenAI's {"error":{...}} as well as vLLM's older
// top-level {"object":"error","message":...} and Ollama's {"error":"text"}.
type errorEnvelope struct {
	Error   *wireError `json:"error"`
	Object  string     `json:"object"`
	Message string     `json:"message"`
	Type    string     `json:"type"`
}

func (e *errorEnvelope) err() *wireError {
	if e.Error != nil {
		return e.Error
	}
	if e.Object == "error" {
		return &wireError{Message: e.Message, Type: e.Type}
	}
	return nil
}

// wireError is an error object. Code is a string on OpenAI and a number on some
// compatible servers, so it is kept as text.
type wireError struct {
	Message string
	Type    string
	Code    string
}

func (e *wireError) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		return json.Unmarshal(data, &e.Message)
	}
	var raw struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	e.Message, e.Type = raw.Message, raw.Type
	if len(raw.Code) > 0 && string(raw.Code) != "null" {
		var s string
		if json.Unmarshal(raw.Code, &s) == nil {
			e.Code = s
		} else {
			e.Code = string(raw.Code)
		}
	}
	return nil
}

// String keeps type and code beside the message: ClassifyHTTP reads the text,
// and "context_length_exceeded" is in the code, not always in the message.
func (e *wireError) String() string {
	msg := e.Message
	if msg == "" {
		msg = "unknown error"
	}
	var extra []string
	if e.Type != "" {
		extra = append(extra, "type "+e.Type)
	}
	if e.Code != "" {
		extra = append(extra, "code "+e.Code)
	}
	if len(extra) > 0 {
		msg += " (" + strings.Join(extra, ", ") + ")"
	}
	return msg
}

// AcceptsURL: OpenAI's and Azure's Chat Completions fetch image URLs
// themselves; audio and files are sent as bytes, and so is everything to
// other compatible servers (several, such as Ollama, take no image URLs).
func (m *Model) AcceptsURL(t model.PartType, _ string) bool {
	return t == model.PartImage && (m.info.Provider == "OpenAI" || m.info.Provider == "Azure")
}
