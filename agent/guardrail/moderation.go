package guardrail

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/run"
)

// Moderation categories OpenAI reports.
var ModerationCategories = []string{
	"sexual", "sexual/minors", "harassment", "harassment/threatening", "hate", "hate/threatening",
	"illicit", "illicit/violent", "self-harm", "self-harm/intent", "self-harm/instructions",
	"violence", "violence/graphic",
}

// Defaults of ModerationConfig.
const (
	DefaultModerationModel   = "omni-moderation-latest"
	DefaultModerationBaseURL = "https://api.openai.com/v1"
	DefaultModerationTimeout = 10 * time.Second
	// maxModerationResponse caps the response body read.
	maxModerationResponse = 1 << 20
)

// ErrModeration is wrapped by the error of a moderation request that failed
// (network, non-2xx status, unreadable answer). A failed request ends the run
// in ERROR: the guardrail does not let unchecked input through.
var ErrModeration = errors.New("guardrail: moderation request failed")

// ModerationConfig configures OpenAI moderation (Agno's
// OpenAIModerationGuardrail).
type ModerationConfig struct {
	// APIKey defaults to $OPENAI_API_KEY; one of the two is required.
	APIKey string
	// BaseURL defaults to DefaultModerationBaseURL; requests go to
	// BaseURL + "/moderations".
	BaseURL string
	// Model defaults to DefaultModerationModel.
	Model string
	// Categories, when set, are the only flagged categories that reject
	// (Agno's raise_for_categories); by default any flag rejects.
	Categories []string
	// Timeout bounds one request, also one sent through Client; default
	// DefaultModerationTimeout.
	Timeout time.Duration
	// Client defaults to a client with no cookie jar. Its own Timeout, if
	// any, applies as well (the shorter wins).
	Client *http.Client
}

// Moderation asks OpenAI's /v1/moderations whether text (and images) break
// its content policy: as a pre-hook for the input (InputCheckError,
// input_not_allowed), as a post-hook for the answer (OutputCheckError,
// output_not_allowed). additional_data carries categories and
// category_scores, as in Agno.
type Moderation struct {
	cfg    ModerationConfig
	url    string
	client *http.Client
}

var (
	_ agent.PreHook  = (*Moderation)(nil)
	_ agent.PostHook = (*Moderation)(nil)
)

// NewModeration validates cfg.
func NewModeration(cfg ModerationConfig) (*Moderation, error) {
	if cfg.APIKey == "" {
		cfg.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	if cfg.APIKey == "" {
		return nil, errors.New("guardrail: moderation needs an OpenAI API key: set OPENAI_API_KEY or ModerationConfig.APIKey")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultModerationBaseURL
	}
	// checked here, once: a bad one failed every request, so every run
	if u, err := url.Parse(cfg.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("guardrail: moderation base URL %q: write an http:// or https:// URL with a host and no query or fragment, e.g. %s", cfg.BaseURL, DefaultModerationBaseURL)
	}
	if cfg.Model == "" {
		cfg.Model = DefaultModerationModel
	}
	for _, c := range cfg.Categories {
		if !slices.Contains(ModerationCategories, c) {
			return nil, fmt.Errorf("guardrail: unknown moderation category %q (categories: %s)", c, strings.Join(ModerationCategories, ", "))
		}
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("guardrail: moderation timeout must be >= 0, got %s", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultModerationTimeout
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{}
	}
	return &Moderation{cfg: cfg, url: strings.TrimSuffix(cfg.BaseURL, "/") + "/moderations", client: client}, nil
}

// Name is the hook's name in events.
func (g *Moderation) Name() string { return "OpenAIModerationGuardrail" }

// PreRun moderates the input text and images.
func (g *Moderation) PreRun(ctx context.Context, in *run.Input) error {
	data, err := g.check(ctx, moderationInput(in.Text(), in.Images))
	if err != nil || data == nil {
		return err
	}
	return &agent.InputCheckError{Message: "OpenAI moderation violation detected.", Trigger: agent.TriggerInputNotAllowed, AdditionalData: data}
}

// PostRun moderates the answer.
func (g *Moderation) PostRun(ctx context.Context, out *run.Output) error {
	data, err := g.check(ctx, run.ContentText(out.Content))
	if err != nil || data == nil {
		return err
	}
	return &agent.OutputCheckError{Message: "OpenAI moderation violation detected.", Trigger: agent.TriggerOutputNotAllowed, AdditionalData: data}
}

// moderationInput is the request's input: the text alone, or text and image
// parts when there are images.
func moderationInput(text string, images []run.Media) any {
	if len(images) == 0 {
		return text
	}
	parts := []any{map[string]any{"type": "text", "text": text}}
	for _, im := range images {
		url := im.URL
		if url == "" && len(im.Content) > 0 {
			mime := im.MIMEType
			if mime == "" {
				mime = http.DetectContentType(im.Content)
			}
			url = "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(im.Content)
		}
		if url != "" {
			parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]string{"url": url}})
		}
	}
	return parts
}

// moderationResponse is the part of OpenAI's answer the guardrail reads.
type moderationResponse struct {
	Results []struct {
		Flagged        bool               `json:"flagged"`
		Categories     map[string]bool    `json:"categories"`
		CategoryScores map[string]float64 `json:"category_scores"`
	} `json:"results"`
}

// check returns the rejection's additional_data when the input must be
// rejected, nil when it passes.
func (g *Moderation) check(ctx context.Context, input any) (map[string]any, error) {
	body, err := json.Marshal(map[string]any{"model": g.cfg.Model, "input": input})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModeration, err)
	}
	// The bound is the request's context, not the client's Timeout, so that
	// it holds for a client given in the config too.
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrModeration, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+g.cfg.APIKey)
	resp, err := g.client.Do(req)
	if err != nil { // %w twice: a cancelled or timed-out check stays one to errors.Is
		return nil, fmt.Errorf("%w: %w", ErrModeration, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxModerationResponse))
	if err != nil {
		return nil, fmt.Errorf("%w: read answer: %w", ErrModeration, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%w: HTTP %d: %s", ErrModeration, resp.StatusCode, apiMessage(raw))
	}
	return g.decide(raw)
}

// decide reads a moderation answer: nil when it passes.
func (g *Moderation) decide(raw []byte) (map[string]any, error) {
	var mr moderationResponse
	if err := json.Unmarshal(raw, &mr); err != nil {
		return nil, fmt.Errorf("%w: the answer is not a moderation result: %v", ErrModeration, err)
	}
	if len(mr.Results) == 0 {
		return nil, fmt.Errorf("%w: the answer has no results", ErrModeration)
	}
	r := mr.Results[0]
	if !r.Flagged {
		return nil, nil
	}
	reject := len(g.cfg.Categories) == 0
	for _, c := range g.cfg.Categories {
		if r.Categories[c] {
			reject = true
		}
	}
	if !reject {
		return nil, nil
	}
	cats := make(map[string]any, len(r.Categories))
	for k, v := range r.Categories {
		cats[k] = v
	}
	scores := make(map[string]any, len(r.CategoryScores))
	for k, v := range r.CategoryScores {
		scores[k] = v
	}
	return map[string]any{"categories": cats, "category_scores": scores}, nil
}

// apiMessage is OpenAI's error message, or the start of the body, at most
// 200 bytes (and a mark when cut) either way: it goes into the run's error.
func apiMessage(raw []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		return clip.Mark(e.Error.Message, 200, "…")
	}
	return clip.Mark(string(raw), 200, "…")
}
