package websearch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/tool/netguard"
)

// loopbackClient is a guarded client opened for the test's loopback fakes.
func loopbackClient() *http.Client {
	return netguard.MustNew(netguard.Config{AllowNetworks: []string{"127.0.0.0/8", "::1/128"}}).Client(0)
}

func execute(t *testing.T, kit tool.Toolkit, args string) tool.Result {
	t.Helper()
	set, err := tool.NewSet(nil, kit)
	if err != nil {
		t.Fatal(err)
	}
	return set.Execute(context.Background(), model.ToolCall{ID: "c1", Name: "web_search", Arguments: args})
}

func results(t *testing.T, res tool.Result) []Result {
	t.Helper()
	if res.Err != nil {
		t.Fatalf("web_search failed: %v", res.Err)
	}
	var out []Result
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
		t.Fatalf("result %q is not a JSON list: %v", res.Content, err)
	}
	return out
}

func TestDuckDuckGo_PostsTheFormAndExtractsOrganicResults(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("testdata/ddg.html")
	if err != nil {
		t.Fatal(err)
	}
	var form map[string][]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/html/" {
			http.Error(w, "wrong endpoint", http.StatusNotFound)
			return
		}
		r.ParseForm()
		form = r.PostForm
		w.Header().Set("Content-Type", "text/html")
		w.Write(page)
	}))
	t.Cleanup(srv.Close)
	kit, err := New(Config{Backend: DuckDuckGo{BaseURL: srv.URL, Client: loopbackClient()}, Region: "us-en", TimeLimit: "w", Modifier: "golang"})
	if err != nil {
		t.Fatal(err)
	}
	got := results(t, execute(t, kit, `{"query":"context","max_results":5}`))
	want := []Result{
		{Title: "context package - context - Go Packages", URL: "https://pkg.go.dev/context", Snippet: "Package context defines the Context type, which carries deadlines, cancellation signals, and other request-scoped values."},
		{Title: "Go Concurrency Patterns: Context", URL: "https://go.dev/blog/context", Snippet: "In Go servers, each incoming request is handled in its own goroutine."},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d results %+v, want %d (ad and javascript: link dropped)", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("result %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if q := form["q"]; len(q) != 1 || q[0] != "golang context" {
		t.Errorf("q = %v, want the modifier prepended", q)
	}
	if form["kl"][0] != "us-en" || form["df"][0] != "w" {
		t.Errorf("region/time limit not sent: %v", form)
	}
	got = results(t, execute(t, kit, `{"query":"context","max_results":1}`))
	if len(got) != 1 {
		t.Errorf("max_results 1 gave %d results", len(got))
	}
}

func TestDuckDuckGo_BotCheckIsAClearError(t *testing.T) {
	t.Parallel()
	page, _ := os.ReadFile("testdata/ddg-challenge.html")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusAccepted)
		w.Write(page)
	}))
	t.Cleanup(srv.Close)
	kit, _ := New(Config{Backend: DuckDuckGo{BaseURL: srv.URL, Client: loopbackClient()}})
	res := execute(t, kit, `{"query":"x"}`)
	if !errors.Is(res.Err, ErrBackend) || !strings.Contains(res.Content, "bot check") {
		t.Fatalf("err = %v, want ErrBackend naming the bot check", res.Err)
	}
}

func TestSearXNG_UsesTheJSONAPI(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/search" || q.Get("format") != "json" || q.Get("q") != "agno agents" || q.Get("time_range") != "month" || q.Get("language") != "fr" {
			http.Error(w, "bad request "+r.URL.String(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"query":"agno agents","number_of_results":0,"results":[
			{"url":"https://docs.agno.com/","title":"Agno docs","content":"Build agents.","engine":"duckduckgo","score":1.0},
			{"url":"https://github.com/agno-agi/agno","title":"agno","content":"The agent framework.","engine":"google"},
			{"url":"https://example.com/3","title":"third","content":""}],"answers":[],"suggestions":[]}`)
	}))
	t.Cleanup(srv.Close)
	kit, _ := New(Config{Backend: SearXNG{BaseURL: srv.URL + "/", Client: loopbackClient()}, Region: "fr", TimeLimit: "m"})
	got := results(t, execute(t, kit, `{"query":"agno agents","max_results":2}`))
	if len(got) != 2 || got[0] != (Result{Title: "Agno docs", URL: "https://docs.agno.com/", Snippet: "Build agents."}) {
		t.Fatalf("got %+v", got)
	}
}

func TestBrave_SendsTheSubscriptionTokenAndStripsHighlights(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/res/v1/web/search" || r.Header.Get("X-Subscription-Token") != "brave-key" ||
			r.Header.Get("Accept") != "application/json" || q.Get("count") != "3" || q.Get("freshness") != "pd" {
			http.Error(w, `{"type":"ErrorResponse","error":{"status":422}}`, http.StatusUnprocessableEntity)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"search","query":{"original":"go generics"},"web":{"type":"search","results":[
			{"title":"Tutorial: <strong>Generics</strong>","url":"https://go.dev/doc/tutorial/generics","description":"Getting started with <strong>generics</strong> &amp; more.","type":"search_result"}]}}`)
	}))
	t.Cleanup(srv.Close)
	kit, _ := New(Config{Backend: Brave{APIKey: "brave-key", BaseURL: srv.URL, Client: loopbackClient()}, TimeLimit: "d"})
	got := results(t, execute(t, kit, `{"query":"go generics","max_results":3}`))
	want := Result{Title: "Tutorial: Generics", URL: "https://go.dev/doc/tutorial/generics", Snippet: "Getting started with generics & more."}
	if len(got) != 1 || got[0] != want {
		t.Fatalf("got %+v, want [%+v]", got, want)
	}
}

func TestTavily_PostsJSONWithBearerKey(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body tavilyRequest
		json.NewDecoder(r.Body).Decode(&body)
		if r.URL.Path != "/search" || r.Header.Get("Authorization") != "Bearer tvly-key" || body.Query != "sqlite wal" || body.MaxResults != 5 {
			http.Error(w, `{"detail":{"error":"bad"}}`, http.StatusBadRequest)
			return
		}
		io.WriteString(w, `{"query":"sqlite wal","results":[{"title":"WAL","url":"https://sqlite.org/wal.html","content":"Write-ahead log.","score":0.9}],"response_time":0.5}`)
	}))
	t.Cleanup(srv.Close)
	kit, _ := New(Config{Backend: Tavily{APIKey: "tvly-key", BaseURL: srv.URL, Client: loopbackClient()}})
	got := results(t, execute(t, kit, `{"query":"sqlite wal"}`))
	if len(got) != 1 || got[0].URL != "https://sqlite.org/wal.html" {
		t.Fatalf("got %+v", got)
	}
}

func TestWebSearch_BadInput(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("a", 5<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("q") {
		case "huge":
			io.WriteString(w, `{"results":[{"url":"https://x","title":"`+huge+`"}]}`)
		case "limited":
			w.Header().Set("Retry-After", "30")
			w.WriteHeader(http.StatusTooManyRequests)
		case "notjson":
			io.WriteString(w, "<html>search page</html>")
		default:
			io.WriteString(w, `{"results":[{"url":"https://x.example/","title":"`+strings.Repeat("t", 5000)+`","content":"`+strings.Repeat("s", 50000)+`"}]}`)
		}
	}))
	t.Cleanup(srv.Close)
	open, _ := New(Config{Backend: SearXNG{BaseURL: srv.URL, Client: loopbackClient()}})
	guarded, _ := New(Config{Backend: SearXNG{BaseURL: srv.URL}}) // default guard
	tests := []struct {
		name    string
		kit     tool.Toolkit
		args    string
		wantErr string
	}{
		{"empty query", open, `{"query":"   "}`, "query is empty"},
		{"missing query", open, `{}`, "invalid arguments"},
		{"query too long", open, `{"query":"` + strings.Repeat("q", 2000) + `"}`, "keep it under"},
		{"max_results too high", open, `{"query":"x","max_results":500}`, "use 1 to 20"},
		{"max_results negative", open, `{"query":"x","max_results":-1}`, "use 1 to 20"},
		{"unknown argument", open, `{"query":"x","engine":"bing"}`, "invalid arguments"},
		{"ssrf: backend on loopback with the default guard", guarded, `{"query":"x"}`, "not a public destination"},
		{"huge answer", open, `{"query":"huge"}`, "more than"},
		{"rate limited", open, `{"query":"limited"}`, "429"},
		{"not the JSON API", open, `{"query":"notjson"}`, "JSON API"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := execute(t, tc.kit, tc.args)
			if res.Err == nil || !strings.Contains(res.Content, tc.wantErr) {
				t.Fatalf("content %q, err %v; want an error containing %q", res.Content, res.Err, tc.wantErr)
			}
		})
	}
	// Oversized fields of a valid answer are capped, not returned whole.
	got := results(t, execute(t, open, `{"query":"long fields"}`))
	if len(got[0].Title) > 300 || len(got[0].Snippet) > 1000 {
		t.Errorf("title %d bytes, snippet %d bytes: not capped", len(got[0].Title), len(got[0].Snippet))
	}
}

func TestNew_RefusesBadSettings(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{TimeLimit: "h"}, {FixedMaxResults: 100}, {FixedMaxResults: -1}, {Backend: Tavily{APIKey: "k"}, Region: "us-en"}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	for _, b := range []Backend{Brave{}, Tavily{}, SearXNG{}} {
		if _, err := b.Search(context.Background(), Query{Text: "x", MaxResults: 1}); err == nil || !strings.Contains(err.Error(), b.Name()) {
			t.Errorf("%s without key/URL: err = %v", b.Name(), err)
		}
	}
}

// Backends without a client made a guarded client, and so a transport, per
// search: each search's keep-alive connection stayed open, unused, until
// the idle timeout. They now share one.
func TestDefaultClient_IsSharedAcrossSearches(t *testing.T) {
	t.Parallel()
	if a, b := defaultClient(nil), defaultClient(nil); a != b || a.Transport != b.Transport {
		t.Error("each search gets a client and transport of its own")
	}
	own := &http.Client{}
	if defaultClient(own) != own {
		t.Error("a given client is not used")
	}
}

// Go's client drops Authorization on a redirect to another host but not
// other headers: Brave's X-Subscription-Token went to wherever the API (or
// a proxy at base_url) redirected. A redirect to another host is refused.
func TestBrave_KeyDoesNotFollowARedirectToAnotherHost(t *testing.T) {
	t.Parallel()
	leaked := make(chan string, 1)
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked <- r.Header.Get("X-Subscription-Token")
		io.WriteString(w, `{"web":{"results":[]}}`)
	}))
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	other.Listener = ln
	other.Start()
	t.Cleanup(other.Close)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusTemporaryRedirect)
	}))
	t.Cleanup(api.Close)
	kit, _ := New(Config{Backend: Brave{APIKey: "brave-key", BaseURL: api.URL, Client: loopbackClient()}})
	res := execute(t, kit, `{"query":"x"}`)
	select {
	case key := <-leaked:
		t.Fatalf("the redirect was followed with token %q", key)
	default:
	}
	if res.Err == nil || !strings.Contains(res.Content, "redirect") {
		t.Errorf("web_search = %s, %v; want an error about the redirect", res.Content, res.Err)
	}
}

// With fixed_max_results the model's max_results is not used (as in Agno,
// where the fixed value wins), so an out-of-range one must not fail the
// search either.
func TestWebSearch_FixedMaxResultsOverridesTheModel(t *testing.T) {
	t.Parallel()
	counts := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		counts <- r.URL.Query().Get("count")
		io.WriteString(w, `{"web":{"results":[]}}`)
	}))
	t.Cleanup(srv.Close)
	kit, err := New(Config{Backend: Brave{APIKey: "k", BaseURL: srv.URL, Client: loopbackClient()}, FixedMaxResults: 3})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range []string{`{"query":"x","max_results":50}`, `{"query":"x","max_results":1}`} {
		if res := execute(t, kit, args); res.Err != nil {
			t.Errorf("%s: %v", args, res.Err)
			continue
		}
		if c := <-counts; c != "3" {
			t.Errorf("%s: backend asked for %s results, want the fixed 3", args, c)
		}
	}
}

// Config.Timeout bounds a search, but a backend without a client of its own
// (DuckDuckGo{}, the default) used a shared client with a 15 s Timeout of
// its own: a Timeout of 30 s for a slow backend was cut at 15 s. The tool's
// Timeout (the call's context) is the bound; the shared client adds none.
func TestDefaultClient_LeavesTheBoundToConfigTimeout(t *testing.T) {
	t.Parallel()
	if c := defaultClient(nil); c.Timeout != 0 {
		t.Errorf("the shared client times out after %s whatever Config.Timeout says", c.Timeout)
	}
	if c := keyed(defaultClient(nil)); c.Timeout != 0 {
		t.Errorf("the keyed shared client times out after %s whatever Config.Timeout says", c.Timeout)
	}
}

// Titles and snippets are capped, but a result's URL went to the model
// whole: one answer (under the 4 MB cap) with a multi-megabyte href filled
// the model's context. A result whose URL is over maxURLBytes is dropped
// (a cut URL leads nowhere).
func TestWebSearch_DropsAResultWithAHugeURL(t *testing.T) {
	t.Parallel()
	long := "https://x.example/" + strings.Repeat("p", 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"results":[{"url":"`+long+`","title":"huge"},{"url":"https://ok.example/","title":"ok"}]}`)
	}))
	t.Cleanup(srv.Close)
	kit, _ := New(Config{Backend: SearXNG{BaseURL: srv.URL, Client: loopbackClient()}})
	res := execute(t, kit, `{"query":"x"}`)
	if len(res.Content) > 10_000 {
		t.Fatalf("web_search returned %d bytes", len(res.Content))
	}
	if got := results(t, res); len(got) != 1 || got[0].URL != "https://ok.example/" {
		t.Fatalf("got %+v, want the ordinary result alone", got)
	}
}

// DuckDuckGo's result links are redirects through /l/?uddg=, written with
// the host (//duckduckgo.com/l/?uddg=…) or, on pages without it, relative
// to the page (/l/?kh=-1&uddg=…): the relative ones were dropped as not
// web URLs, and their results lost.
func TestParseDuckDuckGoHTML_RelativeRedirectLinks(t *testing.T) {
	t.Parallel()
	page := `<div class="result"><a class="result__a" href="/l/?kh=-1&amp;uddg=https%3A%2F%2Fgo.dev%2Fdoc%2F">Docs</a><a class="result__snippet">The docs.</a></div>
<div class="result"><a class="result__a" href="//duckduckgo.com/l/?uddg=https%3A%2F%2Fpkg.go.dev%2F">Pkgs</a></div>
<div class="result"><a class="result__a" href="/l/?uddg=javascript%3Aalert(1)">Bad</a></div>
<div class="result"><a class="result__a" href="/settings">Settings</a></div>`
	got, err := ParseDuckDuckGoHTML([]byte(page))
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{{Title: "Docs", URL: "https://go.dev/doc/", Snippet: "The docs."}, {Title: "Pkgs", URL: "https://pkg.go.dev/"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %+v, want %+v", got, want)
	}
}
