package websearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/tool/netguard"
)

// Result is one search hit, in the field names Agno's web_search returns.
type Result struct {
	Title   string `json:"title"`
	URL     string `json:"href"`
	Snippet string `json:"body"`
}

// Query is one search request as a backend receives it.
type Query struct {
	Text       string
	MaxResults int
	// Region is a backend-specific locale such as "us-en" (DuckDuckGo) or "US"
	// (Brave); empty means the backend's default.
	Region string
	// TimeLimit is "d", "w", "m" or "y" (past day, week, month, year) or empty.
	TimeLimit string
}

// limit is how many results q asks for: MaxResults, DefaultMaxResults when
// it is under one, at most MaxMaxResults (the tool checks the model's
// value; a backend called directly gets any).
func (q Query) limit() int {
	if q.MaxResults < 1 {
		return DefaultMaxResults
	}
	return min(q.MaxResults, MaxMaxResults)
}

// Backend runs searches. Implementations must be safe for concurrent use.
type Backend interface {
	// Name identifies the backend in errors ("duckduckgo", "brave", ...).
	Name() string
	Search(ctx context.Context, q Query) ([]Result, error)
}

// ErrBackend marks a failure of the search service (bad status, bot check,
// unreadable answer); the error text says what to do.
var ErrBackend = errors.New("websearch: search backend failed")

// ErrInvalidConfig marks a backend New or a search refuses before sending
// anything: a base_url that is not an absolute http(s) URL of a host, a
// missing API key, a SearXNG without its URL.
var ErrInvalidConfig = errors.New("websearch: invalid backend configuration")

// Limits of one search.
const (
	DefaultMaxResults = 5
	MaxMaxResults     = 20
	maxQueryBytes     = 1000
	maxResponseBytes  = 4 << 20
	maxURLBytes       = 2048
	DefaultTimeout    = 15 * time.Second
)

// Config configures the web_search toolkit. The zero value searches DuckDuckGo
// through the default network guard.
type Config struct {
	// Backend runs the searches; nil means DuckDuckGo{}.
	Backend Backend
	// Modifier is prepended to every query (e.g. "site:go.dev").
	Modifier string
	// FixedMaxResults, when positive, replaces the model's max_results.
	FixedMaxResults int
	// Region is passed to the backend (see Query.Region); Tavily has no
	// such setting and refuses one.
	Region string
	// TimeLimit is "d", "w", "m", "y" or empty.
	TimeLimit string
	// Timeout bounds one search; zero means DefaultTimeout.
	Timeout time.Duration
}

type searchIn struct {
	Query      string `json:"query" jsonschema:"what to search the web for"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"maximum number of results, 1 to 20; default 5"`
}

// New returns the "websearch" toolkit with one tool, web_search.
func New(cfg Config) (tool.Toolkit, error) {
	if cfg.Backend == nil {
		cfg.Backend = DuckDuckGo{}
	}
	switch cfg.TimeLimit {
	case "", "d", "w", "m", "y":
	default:
		return tool.Toolkit{}, fmt.Errorf("websearch: timelimit %q: use d, w, m or y (past day, week, month, year)", cfg.TimeLimit)
	}
	if cfg.Region != "" && cfg.Backend.Name() == "tavily" {
		return tool.Toolkit{}, errors.New("websearch: backend tavily takes no region (duckduckgo, brave and searxng do)")
	}
	if cfg.FixedMaxResults < 0 || cfg.FixedMaxResults > MaxMaxResults {
		return tool.Toolkit{}, fmt.Errorf("websearch: fixed_max_results %d: use 1 to %d", cfg.FixedMaxResults, MaxMaxResults)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if c, ok := cfg.Backend.(checker); ok {
		if err := c.check(); err != nil {
			return tool.Toolkit{}, err
		}
	}
	t, err := tool.Func(tool.FuncConfig{
		Name:        "web_search",
		Description: "Searches the web and returns a JSON list of results with title, href and body (a snippet). Use web_fetch to read a result.",
		Timeout:     cfg.Timeout,
	}, func(ctx context.Context, in searchIn) (json.RawMessage, error) {
		return cfg.search(ctx, in)
	})
	if err != nil {
		return tool.Toolkit{}, err
	}
	return tool.Toolkit{Name: "websearch", Tools: []tool.Tool{t}}, nil
}

func (cfg Config) search(ctx context.Context, in searchIn) (json.RawMessage, error) {
	q := strings.TrimSpace(in.Query)
	if q == "" {
		return nil, errors.New("query is empty: say what to search for")
	}
	if len(q) > maxQueryBytes {
		return nil, fmt.Errorf("query is %d bytes; keep it under %d", len(q), maxQueryBytes)
	}
	n := in.MaxResults
	if n == 0 {
		n = DefaultMaxResults
	}
	if cfg.FixedMaxResults > 0 {
		n = cfg.FixedMaxResults // the model's value is not used, so not checked
	}
	if n < 1 || n > MaxMaxResults {
		return nil, fmt.Errorf("max_results %d: use 1 to %d", n, MaxMaxResults)
	}
	if cfg.Modifier != "" {
		q = cfg.Modifier + " " + q
	}
	res, err := cfg.Backend.Search(ctx, Query{Text: q, MaxResults: n, Region: cfg.Region, TimeLimit: cfg.TimeLimit})
	if err != nil {
		return nil, err
	}
	// A cut URL leads nowhere: a result whose URL is over the cap is
	// dropped rather than shortened. One that is not a web page's
	// (javascript:, data:, file:, relative) is dropped too: the model
	// would be told to fetch it, a UI to render it as a link.
	res = slices.DeleteFunc(res, func(r Result) bool { return !usable(r) })
	if len(res) > n {
		res = res[:n]
	}
	if res == nil {
		res = []Result{}
	}
	for i := range res {
		res[i].Snippet, _ = tool.Truncate(res[i].Snippet, 1000)
		res[i].Title, _ = tool.Truncate(res[i].Title, 300)
	}
	return json.Marshal(res)
}

// usable reports a result the tool returns: an absolute http(s) URL of a
// host, at most maxURLBytes long. The built-in backends drop the others
// before cutting their answer to the query's limit, so that those do not
// use up max_results.
func usable(r Result) bool {
	if len(r.URL) > maxURLBytes {
		return false
	}
	u, err := url.Parse(r.URL)
	return err == nil && webURL(u)
}

// webURL reports an absolute http or https URL with a host.
func webURL(u *url.URL) bool {
	return (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != ""
}

// checker is the check the built-in backends make of their settings, in
// New and again in each Search (a backend may be called without New).
type checker interface{ check() error }

// checkBaseURL checks a backend's base_url: empty (the service's default)
// unless required, else an absolute http or https URL of a host without a
// query or fragment (the API's path is appended to it).
func checkBaseURL(backend, raw string, required bool) error {
	if raw == "" {
		if required {
			return fmt.Errorf("%w: %s needs base_url (the instance's URL)", ErrInvalidConfig, backend)
		}
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || !webURL(u) || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return fmt.Errorf("%w: %s base_url %q: write the service's http or https URL, without a query or fragment, e.g. https://searx.example.org", ErrInvalidConfig, backend, raw)
	}
	return nil
}

// defaultClient is the guarded client backends use when given none. It is
// made once: a client (and transport) per search left each search's
// keep-alive connection open, unused, until its idle timeout.
func defaultClient(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return sharedClient()
}

// sharedClient has no Timeout of its own: the tool's Timeout (Config.Timeout,
// carried by the call's context) is the bound, and one here would cut a
// longer one short. do bounds a request without a deadline by
// DefaultTimeout instead (a Backend called outside the tool).
var sharedClient = sync.OnceValue(func() *http.Client {
	return netguard.MustNew(netguard.Config{}).Client(0)
})

// keyed returns c for requests that carry an API key: a redirect to another
// host or scheme is refused instead of followed, since Go's client drops
// only Authorization-like headers on the way (Brave's X-Subscription-Token
// would go to the new host, any key over plain http).
func keyed(c *http.Client) *http.Client {
	k := *c
	next := c.CheckRedirect
	k.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if from := via[0].URL; req.URL.Host != from.Host || req.URL.Scheme != from.Scheme {
			return fmt.Errorf("redirected from %s://%s to %s://%s; the API key is not sent there (check base_url)", from.Scheme, from.Host, req.URL.Scheme, req.URL.Host)
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &k
}

// do sends req and returns the body of a 2xx answer, capped.
func do(client *http.Client, req *http.Request, backend string) ([]byte, error) {
	req.Header.Set("User-Agent", userAgent)
	if _, ok := req.Context().Deadline(); !ok && client.Transport == sharedClient().Transport {
		ctx, cancel := context.WithTimeout(req.Context(), DefaultTimeout)
		defer cancel()
		req = req.WithContext(ctx)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBackend, backend, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: reading the answer: %w", ErrBackend, backend, err)
	}
	if len(body) > maxResponseBytes {
		return nil, fmt.Errorf("%w: %s answered more than %d bytes", ErrBackend, backend, maxResponseBytes)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return nil, fmt.Errorf("%w: %s is rate limiting (429, retry after %q); try again later", ErrBackend, backend, resp.Header.Get("Retry-After"))
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return nil, fmt.Errorf("%w: %s refused the request (%d); check the API key", ErrBackend, backend, resp.StatusCode)
	case resp.StatusCode/100 != 2:
		msg, _ := tool.Truncate(strings.TrimSpace(string(body)), 200)
		return nil, fmt.Errorf("%w: %s answered %d: %s", ErrBackend, backend, resp.StatusCode, msg)
	}
	return body, nil
}

const userAgent = "Mozilla/5.0 (compatible; agentry web_search)"
