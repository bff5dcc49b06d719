package websearch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Tavily searches with the Tavily search API.
type Tavily struct {
	// APIKey is required (TAVILY_API_KEY in YAML).
	APIKey string
	// BaseURL replaces https://api.tavily.com.
	BaseURL string
	Client  *http.Client
}

func (Tavily) Name() string { return "tavily" }

var tavilyTimeRange = map[string]string{"d": "day", "w": "week", "m": "month", "y": "year"}

type tavilyRequest struct {
	Query      string `json:"query"`
	MaxResults int    `json:"max_results"`
	Topic      string `json:"topic"`
	TimeRange  string `json:"time_range,omitempty"`
}

type tavilyAnswer struct {
	Results []struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"results"`
}

func (t Tavily) check() error {
	if t.APIKey == "" {
		return fmt.Errorf("%w: tavily needs an API key (set TAVILY_API_KEY or api_key)", ErrInvalidConfig)
	}
	return checkBaseURL("tavily", t.BaseURL, false)
}

// Search posts q to the search endpoint.
func (t Tavily) Search(ctx context.Context, q Query) ([]Result, error) {
	if err := t.check(); err != nil {
		return nil, err
	}
	base := t.BaseURL
	if base == "" {
		base = "https://api.tavily.com"
	}
	payload, err := json.Marshal(tavilyRequest{Query: q.Text, MaxResults: q.limit(), Topic: "general", TimeRange: tavilyTimeRange[q.TimeLimit]})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/search", bytes.NewReader(payload))
	if err != nil {
		return nil, fmt.Errorf("%w: tavily: %w", ErrBackend, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+t.APIKey)
	body, err := do(keyed(defaultClient(t.Client)), req, "tavily")
	if err != nil {
		return nil, err
	}
	var a tavilyAnswer
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, fmt.Errorf("%w: tavily: unreadable answer: %w", ErrBackend, err)
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
