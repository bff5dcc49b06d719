// Package openai embeds text through an OpenAI-compatible /embeddings API
// (OpenAI, Ollama, vLLM, LM Studio), in batches, retrying rate limits and
// server errors with the model package's retry rules.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/agentryhq/agentry/embedder"
	"github.com/agentryhq/agentry/model"
)

// DefaultBaseURL is OpenAI's API root.
const DefaultBaseURL = "https://api.openai.com/v1"

// DefaultBatchSize is how many texts go in one request when BatchSize is zero.
const DefaultBatchSize = 100

// maxResponse bounds an embeddings answer (a batch of 100 × 3072 floats as
// JSON text is about 8 MB).
const maxResponse = 64 << 20

// DefaultTimeout bounds one embeddings request when Config.Timeout is zero:
// a server that accepts the connection and never answers would otherwise
// hold the caller (a knowledge-base load, a search) for as long as its
// context allows, forever without a deadline.
const DefaultTimeout = 60 * time.Second

// MaxBatchSize is the most texts one request may carry (OpenAI's limit on
// an embeddings request's inputs).
const MaxBatchSize = 2048

// floatBytes bounds one float of an answer as JSON text ("-0.0123456789012345678,").
const floatBytes = 24

// Config configures the client.
type Config struct {
	// BaseURL is the API root, default DefaultBaseURL; e.g.
	// http://localhost:11434/v1 for Ollama.
	BaseURL string
	// APIKey is sent as a Bearer token. Empty means OPENAI_API_KEY for
	// api.openai.com and no key for any other server.
	APIKey string
	// Model is the embedding model id, e.g. "text-embedding-3-small". Required.
	Model string
	// Dimensions is the vector length. Required: the store's index is sized
	// from it. It is sent as "dimensions" only when SendDimensions is set
	// (text-embedding-3 models can shorten their vectors; others refuse it).
	Dimensions     int
	SendDimensions bool
	// BatchSize is how many texts one request carries; zero means DefaultBatchSize.
	BatchSize int
	// Retry configures retries of rate limits and server errors.
	Retry model.RetryConfig
	// Timeout bounds each request (one attempt, its answer read included);
	// a request that takes longer fails as unreachable and is retried per
	// Retry. Zero means DefaultTimeout; negative means no bound of its own
	// (only ctx's deadline, and HTTPClient's Timeout, apply).
	Timeout time.Duration
	// HTTPClient defaults to http.DefaultClient. Timeout applies to any client.
	HTTPClient *http.Client
}

// Embedder is the client. Safe for concurrent use.
type Embedder struct {
	cfg Config
	url string
}

// New checks cfg and returns the client.
func New(cfg Config) (*Embedder, error) {
	if cfg.Model == "" {
		return nil, errors.New("embedder/openai: Model is required (e.g. text-embedding-3-small)")
	}
	if cfg.Dimensions <= 0 {
		return nil, errors.New("embedder/openai: Dimensions is required (text-embedding-3-small: 1536)")
	}
	// Checked before the batch bound below, whose product would overflow.
	if cfg.Dimensions > maxResponse/floatBytes {
		return nil, fmt.Errorf("embedder/openai: Dimensions %d: one vector could answer more than %d MiB; use at most %d", cfg.Dimensions, maxResponse>>20, maxResponse/floatBytes)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	// The request goes to BaseURL + "/embeddings": a root with a query or
	// fragment would take the path after them, and one that is not an
	// absolute http(s) URL fails every call.
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("embedder/openai: BaseURL must be an absolute http(s) URL without a query or fragment, such as %s", DefaultBaseURL)
	}
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if cfg.APIKey == "" && cfg.BaseURL == DefaultBaseURL {
		cfg.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = DefaultBatchSize
	}
	// A batch OpenAI refuses, or whose answer could pass maxResponse,
	// would fail every request it makes: refused here instead.
	if cfg.BatchSize > MaxBatchSize {
		return nil, fmt.Errorf("embedder/openai: BatchSize %d is over %d, the most inputs one embeddings request may carry", cfg.BatchSize, MaxBatchSize)
	}
	if most := maxResponse / (cfg.Dimensions * floatBytes); cfg.BatchSize > most {
		return nil, fmt.Errorf("embedder/openai: BatchSize %d of %d-dimension vectors could answer more than %d MiB; use at most %d", cfg.BatchSize, cfg.Dimensions, maxResponse>>20, most)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	return &Embedder{cfg: cfg, url: cfg.BaseURL + "/embeddings"}, nil
}

// Dimensions returns the configured vector length.
func (e *Embedder) Dimensions() int { return e.cfg.Dimensions }

// ID names the model.
func (e *Embedder) ID() string { return fmt.Sprintf("openai:%s:%d", e.cfg.Model, e.cfg.Dimensions) }

type request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

type response struct {
	Data []struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
}

// Embed embeds texts in batches of BatchSize, in order.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.cfg.BatchSize {
		batch := texts[start:min(start+e.cfg.BatchSize, len(texts))]
		var vecs [][]float32
		err := e.cfg.Retry.Do(ctx, func(ctx context.Context) error {
			var err error
			vecs, err = e.call(ctx, batch)
			return err
		})
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *Embedder) call(ctx context.Context, batch []string) ([][]float32, error) {
	// The bound is per attempt, on ctx rather than on the client, so it
	// holds whatever HTTPClient the caller gave and a retry gets its own.
	reqCtx := ctx
	if e.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		reqCtx, cancel = context.WithTimeout(ctx, e.cfg.Timeout)
		defer cancel()
	}
	body := request{Model: e.cfg.Model, Input: batch, EncodingFormat: "float"}
	if e.cfg.SendDimensions {
		body.Dimensions = e.cfg.Dimensions
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, e.url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if e.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.cfg.APIKey)
	}
	resp, err := e.cfg.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, model.Unreachable("OpenAI embeddings", e.url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		// A stall in the answer ends as the wait for it would: the
		// caller's deadline is the caller's, Timeout's is unreachable.
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if reqCtx.Err() != nil {
			return nil, model.Unreachable("OpenAI embeddings", e.url, err)
		}
		return nil, &model.ProviderError{Provider: "OpenAI embeddings", Kind: model.ErrServer, Message: "reading the answer: " + err.Error(), Err: err}
	}
	if resp.StatusCode/100 != 2 {
		// Blanked before any of it becomes a message: a refusal may quote
		// the key, a gateway's page echo the request's headers.
		return nil, model.ClassifyHTTP("OpenAI embeddings", resp.StatusCode, resp.Header, errorText(model.RedactSecrets(raw, e.cfg.APIKey)))
	}
	if len(raw) > maxResponse {
		return nil, &model.ProviderError{Provider: "OpenAI embeddings", Kind: model.ErrMalformedResponse, Message: "answer larger than 64 MB"}
	}
	return e.decode(raw, len(batch))
}

// decode reads an /embeddings answer for n texts: n vectors by index.
func (e *Embedder) decode(raw []byte, n int) ([][]float32, error) {
	var r response
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, &model.ProviderError{Provider: "OpenAI embeddings", Kind: model.ErrMalformedResponse, Message: err.Error(), Err: err}
	}
	if len(r.Data) != n {
		return nil, &model.ProviderError{Provider: "OpenAI embeddings", Kind: model.ErrMalformedResponse,
			Message: fmt.Sprintf("asked for %d embeddings, got %d", n, len(r.Data))}
	}
	vecs := make([][]float32, n)
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= n || vecs[d.Index] != nil {
			return nil, &model.ProviderError{Provider: "OpenAI embeddings", Kind: model.ErrMalformedResponse, Message: fmt.Sprintf("bad or repeated index %d", d.Index)}
		}
		if len(d.Embedding) != e.cfg.Dimensions {
			return nil, fmt.Errorf("%w: model %s gave %d, configured %d", embedder.ErrDimensions, e.cfg.Model, len(d.Embedding), e.cfg.Dimensions)
		}
		vecs[d.Index] = d.Embedding
	}
	return vecs, nil
}

func errorText(raw []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		if c, ok := e.Error.Code.(string); ok && c != "" {
			return c + ": " + e.Error.Message
		}
		return e.Error.Message
	}
	if len(raw) > 500 {
		raw = raw[:500]
	}
	return string(raw)
}
