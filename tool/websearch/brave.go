package websearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// Brave searches with the Brave Search API.
type Brave struct {
	// APIKey is the subscription token (required; BRAVE_API_KEY in YAML).
	APIKey string
	// BaseURL replaces https://api.search.brave.com.
	BaseURL string
	Client  *http.Client
}

func (Brave) Name() string { return "brave" }

var braveFreshness = map[string]string{"d": "pd", "w": "pw", "m": "pm", "y": "py"}

type braveAnswer struct {
	Web struct {
		Results []struct {
			Title       string `json:"title"`
			URL         string `json:"url"`
			Description string `json:"description"`
		} `json:"results"`
	} `json:"web"`
}

func (b Brave) check() error {
	if b.APIKey == "" {
		return fmt.Errorf("%w: brave needs an API key (set BRAVE_API_KEY or api_key)", ErrInvalidConfig)
	}
	return checkBaseURL("brave", b.BaseURL, false)
}

// Search asks the web search endpoint for q.
func (b Brave) Search(ctx context.Context, q Query) ([]Result, error) {
	if err := b.check(); err != nil {
		return nil, err
	}
	base := b.BaseURL
	if base == "" {
		base = "https://api.search.brave.com"
	}
	v := url.Values{"q": {q.Text}, "count": {itoa(q.limit())}}
	if q.Region != "" {
		v.Set("country", q.Region)
	}
	if f := braveFreshness[q.TimeLimit]; f != "" {
		v.Set("freshness", f)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(base, "/")+"/res/v1/web/search?"+v.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: brave: %w", ErrBackend, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Subscription-Token", b.APIKey)
	body, err := do(keyed(defaultClient(b.Client)), req, "brave")
	if err != nil {
		return nil, err
	}
	var a braveAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("%w: brave: unreadable answer: %w", ErrBackend, err)
	}
	var out []Result
	for _, r := range a.Web.Results {
		if len(out) == q.limit() {
			break
		}
		if res := (Result{Title: stripTags(r.Title), URL: r.URL, Snippet: stripTags(r.Description)}); usable(res) {
			out = append(out, res)
		}
	}
	return out, nil
}

// stripTags keeps the text of a snippet that marks matches with <strong>.
func stripTags(s string) string {
	if !strings.ContainsRune(s, '<') {
		return html.UnescapeString(s)
	}
	var b strings.Builder
	z := html.NewTokenizer(strings.NewReader(s))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return collapse(b.String())
		case html.TextToken:
			b.Write(z.Text())
		}
	}
}
