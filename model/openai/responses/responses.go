package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/openai/internal/apiroot"
)

// DefaultBaseURL is OpenAI's API root.
const DefaultBaseURL = apiroot.Default

// Supported lists the parameters the Responses API takes. It has no stop
// sequences, seed or penalties.
var Supported = []string{
	model.ParamTemperature, model.ParamTopP, model.ParamMaxTokens, model.ParamReasoningEffort,
	model.ParamIncludeThoughts, model.ParamResponseFormat, model.ParamToolChoice, model.ParamParallelToolCalls,
	model.ParamTimeout, model.ParamExtraHeaders, model.ParamExtraBody,
}

// Config configures a Model. Only Model is required.
type Config struct {
	// APIKey is sent as a Bearer token; default OPENAI_API_KEY for
	// api.openai.com, none for any other base URL.
	APIKey string
	// BaseURL is the API root, default DefaultBaseURL.
	BaseURL string
	// Model is the model id, e.g. "o4-mini" or "gpt-5".
	Model string
	// HTTPClient defaults to http.DefaultClient (no overall Timeout: use ctx
	// or Params.Timeout).
	HTTPClient *http.Client
	// Store asks OpenAI to keep responses server-side. Off by default: each
	// turn carries its reasoning items itself (include
	// reasoning.encrypted_content, asked of every model but the families
	// known not to reason: gpt-4*, gpt-3.5*, chatgpt-*, gpt-5-chat*), which
	// survives storage in run_data.
	Store bool
	// BuiltinTools are OpenAI-hosted tools sent as given, e.g.
	// {"type":"web_search"}. None by default: a hosted tool runs with the
	// account's permissions and costs, so it is opted into, never implied.
	BuiltinTools []json.RawMessage
	// Params are sent with every call; see Supported. include_thoughts asks
	// for reasoning summaries ("auto").
	Params model.Params
	// ProviderName names the provider in Info and errors; default "OpenAI".
	ProviderName string
}

// Model is a Responses API model, immutable after New and safe for concurrent use.
type Model struct {
	cfg      Config
	endpoint string
	apiKey   string
	info     model.Info
}

var _ model.Model = (*Model)(nil)

// New validates cfg and returns a Model.
func New(cfg Config) (*Model, error) {
	root, err := apiroot.Resolve("responses", cfg.Model, cfg.BaseURL, cfg.APIKey, false)
	if err != nil {
		return nil, err
	}
	if cfg.ProviderName == "" {
		cfg.ProviderName = "OpenAI"
	}
	if err := cfg.Params.Check(cfg.ProviderName, Supported...); err != nil {
		return nil, err
	}
	for i, t := range cfg.BuiltinTools {
		var probe struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(t, &probe) != nil || probe.Type == "" || probe.Type == "function" {
			return nil, fmt.Errorf("responses: BuiltinTools[%d] must be a hosted tool object with a type, e.g. {\"type\":\"web_search\"}", i)
		}
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	return &Model{
		cfg: cfg, apiKey: root.Key,
		endpoint: root.Base + "/responses",
		info:     model.Info{ID: cfg.Model, Name: "OpenAIResponses", Provider: cfg.ProviderName},
	}, nil
}

// Info names the model as Agno does.
func (m *Model) Info() model.Info { return m.info }

// Invoke sends one non-streaming request.
func (m *Model) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	ctx, cancel := m.cfg.Params.WithTimeout(ctx)
	defer cancel()
	body, err := m.buildRequest(req, false)
	if err != nil {
		return nil, err
	}
	resp, err := m.post(ctx, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := model.ReadResponse(ctx, "responses", resp.Body)
	if err != nil {
		return nil, err
	}
	return m.decodeResponse(data)
}

// Stream sends the request with stream: true and yields chunks as events arrive.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		ctx, cancel := m.cfg.Params.WithTimeout(ctx)
		defer cancel()
		body, err := m.buildRequest(req, true)
		if err != nil {
			yield(nil, err)
			return
		}
		resp, err := m.post(ctx, body)
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		for c, err := range m.decodeStream(resp.Body) {
			if err != nil && ctx.Err() != nil {
				err = fmt.Errorf("responses: stream: %w", ctx.Err())
			}
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
}

func (m *Model) post(ctx context.Context, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("responses: building request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if m.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.apiKey)
	}
	for k, v := range m.cfg.Params.ExtraHeaders {
		req.Header.Set(k, v)
	}
	resp, err := m.cfg.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("responses: %w", ctx.Err())
		}
		// No answer at all is not a server error: no server was reached.
		return nil, model.Unreachable(m.info.Provider, m.endpoint, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	// The key and the extra headers' values (a gateway's own credential)
	// stay out of the error.
	raw = model.RedactSecrets(raw, m.secrets()...)
	msg := strings.TrimSpace(string(raw))
	var env struct {
		Error *wireError `json:"error"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Error != nil {
		msg = env.Error.String()
	} else {
		msg = clip.Mark(msg, model.MaxErrorMessage, "…")
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return nil, model.ClassifyHTTP(m.info.Provider, resp.StatusCode, resp.Header, msg)
}

// secrets are the credentials sent: the key and the extra headers' values.
func (m *Model) secrets() []string {
	return append([]string{m.apiKey}, slices.Collect(maps.Values(m.cfg.Params.ExtraHeaders))...)
}

// wireError is an error object; code is text on OpenAI, sometimes a number elsewhere.
type wireError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

func (e *wireError) code() string {
	var s string
	if json.Unmarshal(e.Code, &s) == nil {
		return s
	}
	if len(e.Code) > 0 && string(e.Code) != "null" {
		return string(e.Code)
	}
	return ""
}

func (e *wireError) String() string {
	msg := e.Message
	if msg == "" {
		msg = "unknown error"
	}
	var extra []string
	if e.Type != "" {
		extra = append(extra, "type "+e.Type)
	}
	if c := e.code(); c != "" {
		extra = append(extra, "code "+c)
	}
	if len(extra) > 0 {
		msg += " (" + strings.Join(extra, ", ") + ")"
	}
	return msg
}

// filtered is the error of a response the content filter stopped before
// any output (status incomplete, reason content_filter).
func (m *Model) filtered() error {
	return model.Blocked(m.info.Provider, "stopped by the content filter (incomplete: content_filter)", "rephrase the prompt")
}

// unfinished is the error of a response whose status says it has no answer
// and which carries no error object: failed for no reason given is the
// server's failure (retried); queued or in_progress is a background response
// (background: true, e.g. through extra_body), which Agentry does not poll;
// cancelled is one cancelled before it ended. Other statuses are nil.
func (m *Model) unfinished(status string) error {
	var msg string
	kind := model.ErrBadRequest
	switch status {
	case "failed":
		msg, kind = "response failed with no error given (status failed)", model.ErrServer
	case "queued", "in_progress":
		msg = "response not finished (status " + status + "): background responses are not supported, remove background from the request"
	case "cancelled":
		msg = "response was cancelled (status cancelled)"
	default:
		return nil
	}
	pe := model.ClassifyHTTP(m.info.Provider, 0, nil, msg)
	pe.Kind = kind
	return pe
}

// streamError classifies an error reported after a 200 status, by its code.
func (m *Model) streamError(e *wireError) *model.ProviderError {
	pe := model.ClassifyHTTP(m.info.Provider, 0, nil, e.String())
	kind := strings.ToLower(e.Type + " " + e.code())
	switch {
	case pe.Kind == model.ErrContextLength || pe.Kind == model.ErrQuotaExceeded:
	case strings.Contains(kind, "rate_limit") || strings.Contains(kind, "too_many_requests"):
		pe.Kind = model.ErrRateLimit
	case strings.Contains(kind, "server_error") || strings.Contains(kind, "overloaded") || strings.Contains(kind, "internal"):
		pe.Kind = model.ErrServer
	case strings.Contains(kind, "authentication") || strings.Contains(kind, "invalid_api_key"):
		pe.Kind = model.ErrAuth
	}
	return pe
}

// ReadsHistory reports that the model reads a request's History
// (model.HistoryReader): the agent shares its history without a copy.
func (m *Model) ReadsHistory() bool { return true }
