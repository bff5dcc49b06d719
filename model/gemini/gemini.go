package gemini

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
	"time"

	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/model"
)

// Defaults applied by New.
const (
	DefaultBaseURL       = "https://generativelanguage.googleapis.com"
	DefaultVertexBaseURL = "https://aiplatform.googleapis.com"
	DefaultLocation      = "global"
)

const providerName = "Google"

// Supported lists the parameters Gemini takes. parallel_tool_calls is not
// one: Gemini decides on its own whether to call several functions.
var Supported = []string{
	model.ParamTemperature, model.ParamTopP, model.ParamMaxTokens, model.ParamStop, model.ParamSeed,
	model.ParamPresencePenalty, model.ParamFrequencyPenalty, model.ParamReasoningEffort,
	model.ParamThinkingBudget, model.ParamIncludeThoughts, model.ParamResponseFormat, model.ParamToolChoice,
	model.ParamTimeout, model.ParamExtraHeaders, model.ParamExtraBody,
}

// Config configures a Model. Model is required; the mode is the Gemini API
// unless Vertex is set (or GOOGLE_GENAI_USE_VERTEXAI is true).
type Config struct {
	// Model is the model id, e.g. "gemini-2.5-flash".
	Model string
	// APIKey is sent as x-goog-api-key. Gemini API default: GOOGLE_API_KEY,
	// then GEMINI_API_KEY. On Vertex a key selects express mode (no project).
	APIKey string
	// Vertex selects Vertex AI. Project (default GOOGLE_CLOUD_PROJECT) and
	// Location (default GOOGLE_CLOUD_LOCATION, then "global") name the
	// endpoint; TokenSource supplies OAuth access tokens.
	Vertex   bool
	Project  string
	Location string
	// TokenSource returns a Bearer access token for each Vertex request.
	// Default on Vertex with a Project: DefaultTokenSource (Application
	// Default Credentials).
	TokenSource func(ctx context.Context) (string, error)
	// BaseURL overrides the API root (a proxy, a loopback test server).
	BaseURL string
	// HTTPClient defaults to http.DefaultClient; give it no overall Timeout
	// (streams last as long as the answer), use Params.Timeout or ctx.
	HTTPClient *http.Client
	// Params are sent with every call; see Supported.
	Params model.Params
}

// Model is a Gemini model. It is immutable after New and safe for concurrent use.
//
// Thought summaries (Params.IncludeThoughts) arrive as ReasoningContent;
// thought signatures ride on tool calls (ToolCall.ThoughtSignature) and, for
// text, in Message.ProviderData["thought_signature"], and are sent back on the
// next turn as Gemini requires. Gemini gives function calls no ids unless it
// wants them matched; calls without one get "gcall_<response>_<n>", which is
// never sent back.
type Model struct {
	cfg      Config
	endpoint string // …/models/{model}, to which ":generateContent" is added
	apiKey   string
	id       string // the model id without a resource-name prefix
}

// modelID is the id of a model given by its resource name, as ListModels
// and Google's docs spell it ("models/gemini-2.5-flash", Vertex's
// "publishers/google/models/gemini-2.5-flash"); the google-genai SDK takes
// either, and the endpoint wants the bare id.
func modelID(name string) string {
	name = strings.TrimPrefix(name, "publishers/google/")
	return strings.TrimPrefix(name, "models/")
}

var _ model.Model = (*Model)(nil)

// New validates cfg and returns a Model.
func New(cfg Config) (*Model, error) {
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("gemini: Config.Model is required (e.g. \"gemini-2.5-flash\")")
	}
	if err := cfg.Params.Check(providerName, Supported...); err != nil {
		return nil, err
	}
	if !cfg.Vertex && isTrue(os.Getenv("GOOGLE_GENAI_USE_VERTEXAI")) {
		cfg.Vertex = true
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	m := &Model{cfg: cfg, apiKey: cfg.APIKey, id: modelID(cfg.Model)}
	base := cfg.BaseURL
	modelPath := url.PathEscape(m.id)
	if !cfg.Vertex {
		if m.apiKey == "" {
			m.apiKey = os.Getenv("GOOGLE_API_KEY")
		}
		if m.apiKey == "" {
			m.apiKey = os.Getenv("GEMINI_API_KEY")
		}
		if m.apiKey == "" {
			return nil, fmt.Errorf("gemini: %w: set Config.APIKey, GOOGLE_API_KEY or GEMINI_API_KEY (or use Vertex AI)", model.ErrNoAPIKey)
		}
		if base == "" {
			base = DefaultBaseURL
		}
		m.endpoint = strings.TrimRight(base, "/") + "/v1beta/models/" + modelPath
	} else {
		project, location := cfg.Project, cfg.Location
		if project == "" {
			project = os.Getenv("GOOGLE_CLOUD_PROJECT")
		}
		if location == "" {
			location = os.Getenv("GOOGLE_CLOUD_LOCATION")
		}
		if location == "" {
			location = DefaultLocation
		}
		if base == "" {
			base = DefaultVertexBaseURL
			if location != "global" {
				base = "https://" + location + "-aiplatform.googleapis.com"
			}
		}
		base = strings.TrimRight(base, "/")
		switch {
		case project != "":
			if m.cfg.TokenSource == nil && m.apiKey == "" {
				m.cfg.TokenSource = DefaultTokenSource()
			}
			m.endpoint = base + "/v1/projects/" + url.PathEscape(project) + "/locations/" + url.PathEscape(location) +
				"/publishers/google/models/" + modelPath
		case m.apiKey != "":
			// Express mode: an API key and no project.
			m.endpoint = base + "/v1/publishers/google/models/" + modelPath
		default:
			return nil, errors.New("gemini: Vertex AI needs Config.Project (or GOOGLE_CLOUD_PROJECT) with a TokenSource, or an express-mode APIKey")
		}
	}
	if u, err := url.Parse(m.endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("gemini: Config.BaseURL %q must be an absolute http(s) URL", cfg.BaseURL)
	}
	return m, nil
}

func isTrue(s string) bool {
	s = strings.ToLower(strings.TrimSpace(s))
	return s == "1" || s == "true" || s == "yes"
}

// Info names the model the way Agno does.
func (m *Model) Info() model.Info {
	return model.Info{ID: m.cfg.Model, Name: "Gemini", Provider: providerName}
}

// Invoke sends one generateContent request.
func (m *Model) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	ctx, cancel := m.cfg.Params.WithTimeout(ctx)
	defer cancel()
	body, err := m.buildRequest(req)
	if err != nil {
		return nil, err
	}
	resp, err := m.post(ctx, ":generateContent", body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := model.ReadResponse(ctx, "gemini", resp.Body)
	if err != nil {
		return nil, err
	}
	return decodeResponse(data)
}

// Stream sends streamGenerateContent?alt=sse and yields chunks as they come.
func (m *Model) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		ctx, cancel := m.cfg.Params.WithTimeout(ctx)
		defer cancel()
		body, err := m.buildRequest(req)
		if err != nil {
			yield(nil, err)
			return
		}
		resp, err := m.post(ctx, ":streamGenerateContent?alt=sse", body)
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		for c, err := range decodeStream(resp.Body) {
			if err != nil && ctx.Err() != nil {
				err = fmt.Errorf("gemini: stream: %w", ctx.Err())
			}
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
}

func (m *Model) post(ctx context.Context, method string, body []byte) (*http.Response, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, m.endpoint+method, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("gemini: building request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	var secret string // the credential sent, kept out of error messages
	switch {
	case m.cfg.Vertex && m.cfg.TokenSource != nil:
		tok, err := m.cfg.TokenSource(ctx)
		if err != nil {
			// A call cancelled while the token was on its way is the
			// caller's doing, not a credential the provider refused.
			if ctx.Err() != nil {
				return nil, fmt.Errorf("gemini: %w", ctx.Err())
			}
			return nil, fmt.Errorf("gemini: getting a Vertex AI access token: %w: %w", model.ErrAuth, err)
		}
		hreq.Header.Set("Authorization", "Bearer "+tok)
		secret = tok
	case m.apiKey != "":
		hreq.Header.Set("x-goog-api-key", m.apiKey)
		secret = m.apiKey
	}
	for k, v := range m.cfg.Params.ExtraHeaders {
		hreq.Header.Set(k, v)
	}
	resp, err := m.cfg.HTTPClient.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("gemini: %w", ctx.Err())
		}
		// No answer at all is not a server error: no server was reached.
		return nil, model.Unreachable(providerName, m.endpoint, err)
	}
	if resp.StatusCode/100 == 2 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	// The credential and the extra headers' values (a gateway's own
	// credential) stay out of the error.
	raw = model.RedactSecrets(raw, append([]string{secret}, slices.Collect(maps.Values(m.cfg.Params.ExtraHeaders))...)...)
	msg, we := errorMessage(raw, resp.StatusCode)
	return nil, classify(resp.StatusCode, resp.Header, msg, we)
}

// wireError is Google's error envelope {"error":{"code","message","status",
// "details"}}.
type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	// Details are kept raw and read by details(): a member of another shape
	// never fails the envelope's decoding.
	Details json.RawMessage `json:"details"`
}

// errorDetail is the part of a google.rpc.Status detail Agentry reads: an
// ErrorInfo's reason, a RetryInfo's delay, a QuotaFailure's quota ids.
type errorDetail struct {
	Reason     string `json:"reason"`
	RetryDelay string `json:"retryDelay"`
	Violations []struct {
		QuotaID string `json:"quotaId"`
	} `json:"violations"`
}

// details decodes e's details leniently: a member of another shape is
// skipped, and details that are not a list are none.
func (e *wireError) details() []errorDetail {
	var raw []json.RawMessage
	if e == nil || json.Unmarshal(e.Details, &raw) != nil {
		return nil
	}
	out := make([]errorDetail, 0, len(raw))
	for _, r := range raw {
		var d errorDetail
		if json.Unmarshal(r, &d) == nil {
			out = append(out, d)
		}
	}
	return out
}

// classify is model.ClassifyHTTP with what Google says in an error's status
// and details:
//   - credentials it refuses are model.ErrAuth whatever the HTTP status (a
//     wrong API key is a 400 INVALID_ARGUMENT with the reason API_KEY_INVALID);
//   - RESOURCE_EXHAUSTED says "You exceeded your current quota" for a
//     per-minute limit too: with a daily quota among the violations it is
//     model.ErrQuotaExceeded, else with a RetryInfo it is a model.ErrRateLimit
//     to retry after its delay (a Retry-After header, when sent, wins).
func classify(status int, header http.Header, msg string, e *wireError) *model.ProviderError {
	pe := model.ClassifyHTTP(providerName, status, header, msg)
	if e == nil {
		return pe
	}
	if e.Status == "UNAUTHENTICATED" || e.Status == "PERMISSION_DENIED" {
		pe.Kind = model.ErrAuth
		return pe
	}
	var retry time.Duration
	daily := false
	for _, d := range e.details() {
		switch d.Reason {
		case "API_KEY_INVALID", "API_KEY_SERVICE_BLOCKED", "API_KEY_HTTP_REFERRER_BLOCKED", "API_KEY_IP_ADDRESS_BLOCKED",
			"ACCESS_TOKEN_EXPIRED", "CREDENTIALS_MISSING":
			pe.Kind = model.ErrAuth
			return pe
		}
		if v, err := time.ParseDuration(d.RetryDelay); err == nil && v > 0 {
			retry = v
		}
		for _, q := range d.Violations {
			daily = daily || strings.Contains(q.QuotaID, "PerDay")
		}
	}
	if status == http.StatusTooManyRequests || e.Status == "RESOURCE_EXHAUSTED" {
		switch {
		case daily:
			pe.Kind = model.ErrQuotaExceeded
		case retry > 0:
			pe.Kind = model.ErrRateLimit
			if pe.RetryAfter == 0 {
				pe.RetryAfter = retry
			}
		}
	}
	return pe
}

func (e *wireError) String() string {
	if e.Status != "" {
		return e.Status + ": " + e.Message
	}
	return e.Message
}

// errorMessage is the text of an error body, and its envelope when it has one.
func errorMessage(raw []byte, status int) (string, *wireError) {
	var env struct {
		Error *wireError `json:"error"`
	}
	if json.Unmarshal(raw, &env) == nil && env.Error != nil {
		return env.Error.String(), env.Error
	}
	// A streamed error body can be a JSON array of envelopes.
	var list []struct {
		Error *wireError `json:"error"`
	}
	if json.Unmarshal(raw, &list) == nil && len(list) > 0 && list[0].Error != nil {
		return list[0].Error.String(), list[0].Error
	}
	s := clip.Mark(strings.TrimSpace(string(raw)), model.MaxErrorMessage, "…")
	if s == "" {
		s = http.StatusText(status)
	}
	return s, nil
}

// streamError classifies an error object sent inside a 200 stream by its code.
func streamError(e *wireError) *model.ProviderError {
	return classify(e.Code, nil, e.String(), e)
}

// ReadsHistory reports that the model reads a request's History
// (model.HistoryReader): the agent shares its history without a copy.
func (m *Model) ReadsHistory() bool { return true }
