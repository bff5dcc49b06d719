package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/model"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultVersion   = "2023-06-01"
	DefaultMaxTokens = 4096
)

const providerName = "Anthropic"

// Config configures a Model. Zero values take the documented defaults.
type Config struct {
	// APIKey is sent as x-api-key; default the ANTHROPIC_API_KEY environment variable.
	APIKey string
	// BaseURL is the API root without /v1; default https://api.anthropic.com.
	BaseURL string
	// Model is the model id, e.g. "claude-sonnet-4-5". Required.
	Model string
	// MaxTokens is the default max_tokens (the API requires one); default 4096.
	// Request.MaxTokens overrides it per call. When a request's ThinkingBudget
	// is not below this default, budget + MaxTokens is sent instead, since the
	// API wants max_tokens above budget_tokens.
	MaxTokens int
	// Version is the anthropic-version header; default "2023-06-01".
	Version string
	// Beta lists anthropic-beta feature flags, sent comma-separated.
	Beta []string
	// HTTPClient sends the requests; default http.DefaultClient. It should have
	// no overall Timeout, since streams can run for minutes; use the context.
	HTTPClient *http.Client
	// Params are sent with every call (a Request's own fields override them).
	// The Messages API has no seed, penalties, reasoning_effort or
	// include_thoughts, and structured output needs a schema (no JSON mode):
	// New refuses those.
	Params model.Params
}

// Supported lists the parameters the Messages API takes.
var Supported = []string{
	model.ParamTemperature, model.ParamTopP, model.ParamMaxTokens, model.ParamStop, model.ParamThinkingBudget,
	model.ParamResponseFormat, model.ParamToolChoice, model.ParamParallelToolCalls,
	model.ParamTimeout, model.ParamExtraHeaders, model.ParamExtraBody,
}

// Model is an Anthropic Messages API model. It is safe for concurrent use.
//
// Structured output: the stable API has no response-format field, so
// Request.ResponseFormat becomes a tool named after the format (invalid name
// characters replaced by "_", "structured_output" when unnamed) whose
// input_schema is the format's schema. The model is made to call it
// (tool_choice "tool", or "any" when the caller's own tools must stay callable;
// with extended thinking, which only allows "auto", the system prompt asks for
// it). Its input is returned as the message Content, never as a tool call, any
// prose around it is dropped, and a "tool_use" stop reason reads "end_turn"
// when no other tool was called.
//
// Usage follows Agno: InputTokens is the uncached input Anthropic reports,
// TotalTokens is input plus output, cache reads and writes are counted apart.
// Thinking blocks in assistant messages are sent back first and verbatim;
// unsigned ones (from another provider) are left out, as the API would refuse
// them. A message Agno stored keeps its thinking as reasoning_content signed
// by provider_data.signature, and redacted_reasoning_content: those are sent
// back the same way. Tool arguments that are not a JSON object are sent as {},
// and tool call ids with characters outside [a-zA-Z0-9_-] (another
// provider's, in a history) with those replaced by "_", on the call and on
// its result alike.
type Model struct {
	cfg      Config
	endpoint string
	beta     string
}

var _ model.Model = (*Model)(nil)

// New validates cfg, applies defaults and returns a Model.
func New(cfg Config) (*Model, error) {
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("ANTHROPIC_API_KEY")
	}
	if cfg.APIKey == "" {
		return nil, fmt.Errorf("anthropic: %w: set Config.APIKey or the ANTHROPIC_API_KEY environment variable", model.ErrNoAPIKey)
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("anthropic: Config.Model is required (e.g. \"claude-sonnet-4-5\")")
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: Config.MaxTokens is %d; use a positive value or 0 for the default", cfg.MaxTokens)
	}
	if cfg.MaxTokens == 0 {
		cfg.MaxTokens = DefaultMaxTokens
	}
	if err := cfg.Params.Check(providerName, Supported...); err != nil {
		return nil, err
	}
	if rf := cfg.Params.ResponseFormat; rf != nil && len(rf.Schema) == 0 {
		return nil, fmt.Errorf("anthropic: %w: response_format without a schema (JSON mode); give a JSON Schema", model.ErrUnsupportedParam)
	}
	if b := cfg.Params.ThinkingBudget; b != nil && *b < 0 {
		return nil, fmt.Errorf("anthropic: thinking_budget %d: give a token count of at least 1024 (0: no thinking)", *b)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("anthropic: Config.BaseURL %q is not an http(s) URL", cfg.BaseURL)
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	var beta []string
	for _, b := range cfg.Beta {
		if b = strings.TrimSpace(b); b != "" {
			beta = append(beta, b)
		}
	}
	cfg.Beta = beta
	return &Model{
		cfg:      cfg,
		endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/v1/messages",
		beta:     strings.Join(beta, ","),
	}, nil
}

// Info names the model the way Agno does (name "Claude", provider "Anthropic").
func (m *Model) Info() model.Info {
	return model.Info{ID: m.cfg.Model, Name: "Claude", Provider: providerName}
}

// Invoke sends a non-streaming request and returns the whole answer.
func (m *Model) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	ctx, cancel := m.cfg.Params.WithTimeout(ctx)
	defer cancel()
	plan, err := m.buildRequest(req, false)
	if err != nil {
		return nil, err
	}
	resp, err := m.post(ctx, plan.body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := model.ReadResponse(ctx, "anthropic", resp.Body)
	if err != nil {
		return nil, err
	}
	return decodeResponse(raw, plan.formatTool)
}

// Stream sends a streaming request and yields chunks as events arrive. Breaking
// out of the loop closes the connection.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		ctx, cancel := m.cfg.Params.WithTimeout(ctx)
		defer cancel()
		plan, err := m.buildRequest(req, true)
		if err != nil {
			yield(nil, err)
			return
		}
		resp, err := m.post(ctx, plan.body)
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		err = decodeStream(resp.Body, plan.formatTool, yield)
		if err != nil {
			// A read cut short by cancellation is the caller's doing, not a
			// malformed stream.
			if ctxErr := ctx.Err(); ctxErr != nil {
				err = fmt.Errorf("anthropic: stream: %w", ctxErr)
			}
			yield(nil, err)
		}
	}
}

// post sends body to the Messages endpoint and returns a 2xx response; any other
// status is turned into a classified *model.ProviderError.
func (m *Model) post(ctx context.Context, body []byte) (*http.Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, m.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("anthropic: building request: %w", err)
	}
	hreq.Header.Set("x-api-key", m.cfg.APIKey)
	hreq.Header.Set("anthropic-version", m.cfg.Version)
	hreq.Header.Set("content-type", "application/json")
	if m.beta != "" {
		hreq.Header.Set("anthropic-beta", m.beta)
	}
	for k, v := range m.cfg.Params.ExtraHeaders {
		hreq.Header.Set(k, v)
	}
	resp, err := m.cfg.HTTPClient.Do(hreq)
	if err != nil {
		// No answer at all is not a server error (no server was reached); a
		// cancelled context is the caller's doing.
		if ctx.Err() != nil {
			return nil, fmt.Errorf("anthropic: %w", ctx.Err())
		}
		return nil, model.Unreachable(providerName, m.endpoint, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	// The key and the extra headers' values (a gateway's own credential)
	// stay out of the error.
	secrets := append([]string{m.cfg.APIKey}, slices.Collect(maps.Values(m.cfg.Params.ExtraHeaders))...)
	return nil, httpError(resp.StatusCode, resp.Header, model.RedactSecrets(raw, secrets...))
}

// wireError is Anthropic's error envelope, used by error bodies and the
// stream's error event: {"type":"error","error":{"type":...,"message":...}}.
type wireError struct {
	Type  string `json:"type"`
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// httpError classifies a non-2xx answer.
func httpError(status int, h http.Header, raw []byte) error {
	msg := errorMessage(raw)
	if msg == "" {
		msg = http.StatusText(status)
	}
	return model.ClassifyHTTP(providerName, status, h, msg)
}

// errorMessage extracts "type: message" from an error body, or a short excerpt
// of a body that is not Anthropic's envelope (a proxy's HTML page, say).
func errorMessage(raw []byte) string {
	var we wireError
	if json.Unmarshal(raw, &we) == nil && we.Error != nil && (we.Error.Type != "" || we.Error.Message != "") {
		if we.Error.Type == "" {
			return we.Error.Message
		}
		return we.Error.Type + ": " + we.Error.Message
	}
	return clip.Mark(strings.TrimSpace(string(raw)), model.MaxErrorMessage, "…")
}

// streamError classifies an `event: error` frame, which arrives after a 200
// status, so the kind comes from the error type rather than an HTTP status.
func streamError(typ, msg string) *model.ProviderError {
	text := msg
	if typ != "" {
		text = typ + ": " + msg
	}
	e := &model.ProviderError{Provider: providerName, Message: clip.Mark(text, model.MaxErrorMessage, "…")}
	switch typ {
	case "overloaded_error", "api_error", "timeout_error":
		e.Kind = model.ErrServer
	case "rate_limit_error":
		e.Kind = model.ErrRateLimit
	case "authentication_error", "permission_error":
		e.Kind = model.ErrAuth
	case "billing_error":
		e.Kind = model.ErrQuotaExceeded
	default:
		// invalid_request_error, not_found_error, request_too_large and anything
		// new: let the shared wording check spot context-length errors.
		e.Kind = model.ClassifyHTTP(providerName, http.StatusBadRequest, nil, msg).Kind
	}
	return e
}

// ReadsHistory reports that the model reads a request's History
// (model.HistoryReader): the agent shares its history without a copy.
func (m *Model) ReadsHistory() bool { return true }
