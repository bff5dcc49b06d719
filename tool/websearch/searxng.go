package websearch

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// SearXNG searches a SearXNG instance through its JSON API (the instance must
// enable the json format in its settings).
type SearXNG struct {
	// BaseURL of the instance, e.g. http://searxng.internal:8080 (required).
	// An instance on a private network also needs that network allowed in
	// the client's guard.
	BaseURL string
	// Client sends the requests; nil means a client behind the default guard.
	Client *http.Client
}

func (SearXNG) Name() string { return "searxng" }

var searxTimeRange = map[string]string{"d": "day", "w": "week", "m": "month", "y": "year"}

type searxAnswer struct {
	Results []struct {
		URL     string `json:"url"`
		Title   string `json:"title"`
		Content string `json:"content"`
	} `json:"results"`
}

func (s SearXNG) check() error { return checkBaseURL("searxng", s.BaseURL, true) }

// Search asks the instance's JSON API for q.
func (s SearXNG) Search(ctx context.Context, q Query) ([]Result, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	v := url.Values{"q": {q.Text}, "format": {"json"}, "pageno": {"1"}}
	if q.Region != "" {
		v.Set("language", q.Region)
	}
	if tr := searxTimeRange[q.TimeLimit]; tr != "" {
		v.Set("time_range", tr)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(s.BaseURL, "/")+"/search?"+v.Encode(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: searxng: %w", ErrBackend, err)
	}
	req.Header.Set("Accept", "application/json")
	body, err := do(defaultClient(s.Client), req, "searxng")
	if err != nil {
		return nil, err
	}
	var a searxAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("%w: searxng: answer is not the JSON API (enable `formats: [html, json]` in the instance's settings): %w", ErrBackend, err)
	}
	var out []Result
	for _, r := range a.Results {
		if len(out) == q.limit() {
			break
		}
		if res := (Result{Title: r.Title, URL: r.URL, Snippet: r.Content}); usable(res) {
			out = append(out, res)
		}
	}
	return out, nil
}

// itoa is strconv.Itoa, kept short for query building.
func itoa(n int) string { return strconv.Itoa(n) }
