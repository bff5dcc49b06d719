package websearch

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/PuerkitoBio/goquery"
)

// DuckDuckGo searches through DuckDuckGo's keyless HTML endpoint. The zero
// value is ready to use.
type DuckDuckGo struct {
	// BaseURL replaces https://html.duckduckgo.com (tests, a mirror).
	BaseURL string
	// Client sends the requests; nil means a client behind the default
	// network guard.
	Client *http.Client
}

func (DuckDuckGo) Name() string { return "duckduckgo" }

func (d DuckDuckGo) check() error { return checkBaseURL("duckduckgo", d.BaseURL, false) }

// Search posts the query form and extracts the organic results.
func (d DuckDuckGo) Search(ctx context.Context, q Query) ([]Result, error) {
	if err := d.check(); err != nil {
		return nil, err
	}
	base := d.BaseURL
	if base == "" {
		base = "https://html.duckduckgo.com"
	}
	form := url.Values{"q": {q.Text}, "b": {""}}
	if q.Region != "" {
		form.Set("kl", q.Region)
	}
	if q.TimeLimit != "" {
		form.Set("df", q.TimeLimit)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(base, "/")+"/html/", strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("%w: duckduckgo: %w", ErrBackend, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	body, err := do(defaultClient(d.Client), req, "duckduckgo")
	if err != nil {
		return nil, err
	}
	res, err := ParseDuckDuckGoHTML(body)
	if err != nil {
		return nil, err
	}
	res = slices.DeleteFunc(res, func(r Result) bool { return !usable(r) })
	if n := q.limit(); len(res) > n {
		res = res[:n]
	}
	return res, nil
}

// ParseDuckDuckGoHTML extracts the organic results (ads skipped) from a page of
// DuckDuckGo's HTML endpoint. Result links are DuckDuckGo redirects; the
// target URL is taken from them. A bot-check page is an ErrBackend error.
func ParseDuckDuckGoHTML(page []byte) ([]Result, error) {
	doc, err := goquery.NewDocumentFromReader(bytes.NewReader(page))
	if err != nil {
		return nil, fmt.Errorf("%w: duckduckgo: unreadable page: %w", ErrBackend, err)
	}
	if doc.Find("form#challenge-form, .anomaly-modal__modal").Length() > 0 {
		return nil, fmt.Errorf("%w: duckduckgo answered with a bot check; try again later or configure another backend (searxng, brave, tavily)", ErrBackend)
	}
	var out []Result
	doc.Find(".result").Each(func(_ int, s *goquery.Selection) {
		if s.HasClass("result--ad") {
			return
		}
		a := s.Find("a.result__a").First()
		href, ok := resultURL(a.AttrOr("href", ""))
		if !ok {
			return
		}
		out = append(out, Result{
			Title:   collapse(a.Text()),
			URL:     href,
			Snippet: collapse(s.Find(".result__snippet").First().Text()),
		})
	})
	return out, nil
}

// resultURL turns a result link (a //duckduckgo.com/l/?uddg=… or /l/?uddg=…
// redirect, or a direct link) into the target URL; only http and https targets are kept.
func resultURL(href string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(href))
	if err != nil {
		return "", false
	}
	// The redirect is written with DuckDuckGo's host or relative to the
	// page (/l/?kh=-1&uddg=…).
	if (u.Host == "" && u.Scheme == "" || strings.HasSuffix(u.Hostname(), "duckduckgo.com")) && strings.HasPrefix(u.Path, "/l/") {
		if u, err = url.Parse(u.Query().Get("uddg")); err != nil {
			return "", false
		}
	}
	if !webURL(u) {
		return "", false
	}
	return u.String(), true
}

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }
