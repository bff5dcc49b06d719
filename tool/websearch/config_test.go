package websearch

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// A BaseURL that is not an absolute http(s) URL of a host (a forgotten
// scheme, ftp:, file:, javascript:, one with a query or fragment the path
// would be appended after) was taken by New and failed at the first
// search, with Go's transport error; missing API keys and a SearXNG
// without a URL too. New refuses them, naming the backend and the fix.
func TestNew_RefusesABadBaseURLOrMissingKey(t *testing.T) {
	t.Parallel()
	bad := []string{"searx.internal:8080", "searx.internal", "ftp://search.example", "file:///etc/passwd",
		"javascript:alert(1)", "http://", "https:///path", "https://search.example/?q=1", "https://search.example/#top",
		"http://[::1", " https://search.example"}
	for _, u := range bad {
		for _, b := range []Backend{DuckDuckGo{BaseURL: u}, Brave{APIKey: "k", BaseURL: u}, Tavily{APIKey: "k", BaseURL: u}, SearXNG{BaseURL: u}} {
			_, err := New(Config{Backend: b})
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "base_url") || !strings.Contains(err.Error(), b.Name()) {
				t.Errorf("New(%s, base_url %q): err = %v, want ErrInvalidConfig about base_url", b.Name(), u, err)
			}
			// and a search called directly says the same
			if _, err := b.Search(context.Background(), Query{Text: "x", MaxResults: 1}); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("%s.Search with base_url %q: err = %v, want ErrInvalidConfig", b.Name(), u, err)
			}
		}
	}
	for _, b := range []Backend{Brave{}, Tavily{}, SearXNG{}} {
		if _, err := New(Config{Backend: b}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), b.Name()) {
			t.Errorf("New(%s without key/URL): err = %v, want ErrInvalidConfig", b.Name(), err)
		}
	}
	for _, b := range []Backend{DuckDuckGo{}, DuckDuckGo{BaseURL: "http://127.0.0.1:8080/"}, Brave{APIKey: "k"},
		Tavily{APIKey: "k", BaseURL: "https://api.tavily.com"}, SearXNG{BaseURL: "HTTPS://searx.example/base/"}} {
		if _, err := New(Config{Backend: b}); err != nil {
			t.Errorf("New(%+v): %v", b, err)
		}
	}
}

// Only DuckDuckGo's parser kept a result to http and https URLs: a
// javascript:, data:, file: or ftp: URL from SearXNG, Brave or Tavily (an
// instance's engine, or a page gaming one) went to the model as a link to
// follow, or to a UI that renders it. Every backend's results are now
// kept to absolute http(s) URLs.
func TestWebSearch_DropsResultsThatAreNotWebURLs(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"results":[
			{"url":"javascript:alert(document.cookie)","title":"js"},
			{"url":"JavaScript:alert(1)","title":"js2"},
			{"url":"data:text/html,<script>alert(1)</script>","title":"data"},
			{"url":"file:///etc/passwd","title":"file"},
			{"url":"ftp://files.example/x","title":"ftp"},
			{"url":"//evil.example/x","title":"scheme-relative"},
			{"url":"/relative","title":"relative"},
			{"url":"","title":"none"},
			{"url":"http:///nohost","title":"no host"},
			{"url":"java\tscript:alert(1)","title":"tab"},
			{"url":"HTTPS://Docs.Example/ok","title":"ok"},
			{"url":"http://plain.example/","title":"plain"}]}`)
	}))
	t.Cleanup(srv.Close)
	kit, err := New(Config{Backend: SearXNG{BaseURL: srv.URL, Client: loopbackClient()}, FixedMaxResults: 20})
	if err != nil {
		t.Fatal(err)
	}
	got := results(t, execute(t, kit, `{"query":"x"}`))
	if len(got) != 2 || got[0].Title != "ok" || got[1].Title != "plain" {
		t.Fatalf("got %+v, want only the http(s) results", got)
	}
}

// A backend called directly (not through the tool, which checks
// max_results) with a MaxResults under one: DuckDuckGo's cut res[:n]
// panicked on a negative one, and the API backends asked for count=-1 or
// 0. Such a query takes DefaultMaxResults, and one over MaxMaxResults is
// capped.
func TestBackends_MaxResultsOutOfRange(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("testdata/ddg.html")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var counts []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/html/" {
			w.Write(page)
			return
		}
		mu.Lock()
		counts = append(counts, r.URL.Query().Get("count"))
		mu.Unlock()
		io.WriteString(w, `{"web":{"results":[{"url":"https://a.example/"},{"url":"https://b.example/"}]}}`)
	}))
	t.Cleanup(srv.Close)
	ddg := DuckDuckGo{BaseURL: srv.URL, Client: loopbackClient()}
	brave := Brave{APIKey: "k", BaseURL: srv.URL, Client: loopbackClient()}
	for _, n := range []int{-1, 0, 1000} {
		res, err := ddg.Search(context.Background(), Query{Text: "x", MaxResults: n})
		if err != nil || len(res) == 0 || len(res) > MaxMaxResults {
			t.Errorf("duckduckgo with MaxResults %d: %d results, %v", n, len(res), err)
		}
		if _, err := brave.Search(context.Background(), Query{Text: "x", MaxResults: n}); err != nil {
			t.Errorf("brave with MaxResults %d: %v", n, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(counts, ",") != "5,5,20" {
		t.Errorf("brave asked for counts %v, want 5, 5, 20", counts)
	}
}

// Results that are not web URLs were dropped after the backend had cut its
// answer to max_results, so a page whose first results were such got the
// model fewer results than it asked for (none here) while good ones
// followed. They are dropped before the cut.
func TestWebSearch_DroppedResultsDoNotUseUpMaxResults(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var items []string
		for i := range 5 {
			items = append(items, `{"url":"javascript:alert(`+string(rune('0'+i))+`)","title":"js"}`)
		}
		items = append(items, `{"url":"https://x.example/`+strings.Repeat("p", maxURLBytes)+`","title":"huge"}`)
		for i := range 6 {
			items = append(items, `{"url":"https://ok.example/`+string(rune('a'+i))+`","title":"ok"}`)
		}
		io.WriteString(w, `{"results":[`+strings.Join(items, ",")+`]}`)
	}))
	t.Cleanup(srv.Close)
	kit, err := New(Config{Backend: SearXNG{BaseURL: srv.URL, Client: loopbackClient()}})
	if err != nil {
		t.Fatal(err)
	}
	got := results(t, execute(t, kit, `{"query":"x","max_results":3}`))
	if len(got) != 3 || got[0].URL != "https://ok.example/a" || got[2].URL != "https://ok.example/c" {
		t.Fatalf("got %+v, want the first three web results", got)
	}
}
