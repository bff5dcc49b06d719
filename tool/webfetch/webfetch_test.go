package webfetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/tool/netguard"
)

// openLoopback lets the test reach its fake servers.
var openLoopback = netguard.Config{AllowNetworks: []string{"127.0.0.0/8"}}

func fetch(t *testing.T, cfg Config, args string) tool.Result {
	t.Helper()
	kit, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(nil, kit)
	if err != nil {
		t.Fatal(err)
	}
	return set.Execute(context.Background(), model.ToolCall{ID: "c1", Name: "web_fetch", Arguments: args})
}

func site(t *testing.T) *httptest.Server {
	t.Helper()
	article, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/post", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(article)
	})
	mux.HandleFunc("/old", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/post", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/notes.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
		w.Write([]byte("caf\xe9 notes")) // é in Latin-1
	})
	mux.HandleFunc("/nul.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "before\x00after")
	})
	mux.HandleFunc("/deep.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><head><title>Old page</title><style>p{}</style></head><body>"+
			strings.Repeat("<font>", 600)+"<p>Deep text survives.</p><script>var hidden = 1</script><p>Second paragraph.</p></body></html>")
	})
	mux.HandleFunc("/data.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	mux.HandleFunc("/image.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n"))
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		chunk := []byte(strings.Repeat("all work and no play ", 1000))
		for range 1000 { // 20 MB offered; the client must stop early
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "User-agent: *\nDisallow: /private\n")
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/private/page", http.StatusFound)
	})
	mux.HandleFunc("/private/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "private page")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestWebFetch_ReturnsTheArticleAsMarkdown(t *testing.T) {
	t.Parallel()
	srv := site(t)
	res := fetch(t, Config{Network: openLoopback}, `{"url":"`+srv.URL+`/old"}`)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	for _, want := range []string{
		"Title: Write-ahead logging explained",
		"URL: " + srv.URL + "/post", // the final URL after the redirect
		"## How a checkpoint works",
		"- Readers do not block writers.",
		"[full reference](" + srv.URL + "/docs/wal)", // links made absolute
	} {
		if !strings.Contains(res.Content, want) {
			t.Errorf("missing %q in:\n%s", want, res.Content)
		}
	}
	for _, unwanted := range []string{"do-not-return-this-script", "color: red", "Log in", "Privacy"} {
		if strings.Contains(res.Content, unwanted) {
			t.Errorf("boilerplate %q returned:\n%s", unwanted, res.Content)
		}
	}
}

func TestWebFetch_TextFormatAndNonHTMLPages(t *testing.T) {
	t.Parallel()
	srv := site(t)
	cfg := Config{Network: openLoopback}
	res := fetch(t, cfg, `{"url":"`+srv.URL+`/post","format":"text"}`)
	if res.Err != nil || strings.Contains(res.Content, "##") || !strings.Contains(res.Content, "How a checkpoint works") {
		t.Errorf("text format: %v\n%s", res.Err, res.Content)
	}
	res = fetch(t, cfg, `{"url":"`+srv.URL+`/notes.txt"}`)
	if res.Err != nil || !strings.Contains(res.Content, "café notes") {
		t.Errorf("latin-1 text: %v %q", res.Err, res.Content)
	}
	res = fetch(t, cfg, `{"url":"`+srv.URL+`/data.json"}`)
	if res.Err != nil || !strings.HasSuffix(res.Content, `{"ok":true}`) {
		t.Errorf("json: %v %q", res.Err, res.Content)
	}
	// A NUL byte went out as is, and the result store refuses results
	// holding one as not text (HTML parsing already replaces them).
	res = fetch(t, cfg, `{"url":"`+srv.URL+`/nul.txt"}`)
	if res.Err != nil || !strings.HasSuffix(res.Content, "before\uFFFDafter") {
		t.Errorf("text with a NUL: %v %q", res.Err, res.Content)
	}
}

func TestWebFetch_RobotsTxtIsOptIn(t *testing.T) {
	t.Parallel()
	srv := site(t)
	args := `{"url":"` + srv.URL + `/private/page"}`
	if res := fetch(t, Config{Network: openLoopback}, args); res.Err != nil {
		t.Fatalf("robots.txt obeyed without RespectRobots: %v", res.Err)
	}
	res := fetch(t, Config{Network: openLoopback, RespectRobots: true}, args)
	if !errors.Is(res.Err, ErrDisallowedByRobots) {
		t.Fatalf("err = %v, want ErrDisallowedByRobots", res.Err)
	}
	if res := fetch(t, Config{Network: openLoopback, RespectRobots: true}, `{"url":"`+srv.URL+`/post"}`); res.Err != nil {
		t.Errorf("allowed path refused: %v", res.Err)
	}
	// A redirect to a disallowed path is refused too; robots.txt was read
	// only for the URL asked for, and the redirect followed.
	res = fetch(t, Config{Network: openLoopback, RespectRobots: true}, `{"url":"`+srv.URL+`/moved"}`)
	if !errors.Is(res.Err, ErrDisallowedByRobots) || strings.Contains(res.Content, "private page") {
		t.Errorf("redirect to /private/page: %q, err = %v, want ErrDisallowedByRobots", res.Content, res.Err)
	}
	if res := fetch(t, Config{Network: openLoopback, RespectRobots: true}, `{"url":"`+srv.URL+`/old"}`); res.Err != nil {
		t.Errorf("redirect to an allowed path refused: %v", res.Err)
	}
}

func TestWebFetch_BadInput(t *testing.T) {
	t.Parallel()
	srv := site(t)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	open := Config{Network: openLoopback}
	tests := []struct {
		name    string
		cfg     Config
		args    string
		wantErr string
	}{
		{"ssrf: loopback with the default guard", Config{}, `{"url":"` + srv.URL + `/post"}`, "not a public destination"},
		{"ssrf: localhost resolves to loopback", Config{Network: netguard.Config{Ports: []uint16{80, 443, mustPort(port)}}}, `{"url":"http://localhost:` + port + `/post"}`, "not a public destination"},
		{"ssrf: cloud metadata address", Config{}, `{"url":"http://169.254.169.254/latest/meta-data/"}`, "not a public destination"},
		{"ssrf: IPv4-mapped IPv6 loopback", Config{}, `{"url":"http://[::ffff:127.0.0.1]:` + port + `/"}`, "not a public destination"},
		{"file scheme", open, `{"url":"file:///etc/passwd"}`, "only http and https"},
		{"credentials in the URL", open, `{"url":"http://user:pw@127.0.0.1:` + port + `/post"}`, "user:password"},
		{"not a URL", open, `{"url":"::::"}`, "does not parse"},
		{"unknown format", open, `{"url":"` + srv.URL + `/post","format":"pdf"}`, "invalid arguments"},
		{"binary content", open, `{"url":"` + srv.URL + `/image.png"}`, "image/png"},
		{"error status", open, `{"url":"` + srv.URL + `/missing"}`, "404"},
		{"slow server", Config{Network: openLoopback, Timeout: 200 * time.Millisecond}, `{"url":"` + srv.URL + `/slow"}`, "did not finish"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := fetch(t, tc.cfg, tc.args)
			if res.Err == nil || !strings.Contains(res.Content, tc.wantErr) {
				t.Fatalf("content %q, err %v; want an error containing %q", res.Content, res.Err, tc.wantErr)
			}
		})
	}
}

func TestWebFetch_HugePageIsCapped(t *testing.T) {
	t.Parallel()
	srv := site(t)
	res := fetch(t, Config{Network: openLoopback, MaxBytes: 1 << 20, MaxOutput: 10_000}, `{"url":"`+srv.URL+`/huge"}`)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	if len(res.Content) > 10_000+500 || !strings.Contains(res.Content, "[truncated") {
		t.Errorf("returned %d bytes, want at most ~10,000 and a truncation note", len(res.Content))
	}
}

func TestNew_RefusesABadNetworkPolicy(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Network: netguard.Config{AllowNetworks: []string{"everything"}}}); err == nil {
		t.Fatal("bad allow_networks accepted")
	}
}

func mustPort(s string) uint16 {
	var p uint16
	for _, c := range s {
		p = p*10 + uint16(c-'0')
	}
	return p
}

func TestNew_RefusesAUserAgentThatCannotBeSent(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{UserAgent: "bot\r\nX-Evil: 1"}); err == nil {
		t.Error("a user agent with a line break accepted: every fetch would fail")
	}
}

// A page nested deeper than the HTML parser allows (600 unclosed <font>
// tags) failed with "does not parse"; its text comes back instead.
func TestWebFetch_TooDeepPageGivesItsText(t *testing.T) {
	t.Parallel()
	srv := site(t)
	for _, format := range []string{"markdown", "text"} {
		res := fetch(t, Config{Network: openLoopback}, `{"url":"`+srv.URL+`/deep.html","format":"`+format+`"}`)
		if res.Err != nil || !strings.Contains(res.Content, "Title: Old page") ||
			!strings.Contains(res.Content, "Deep text survives.\nSecond paragraph.") || strings.Contains(res.Content, "hidden") {
			t.Errorf("%s: %v\n%s", format, res.Err, res.Content)
		}
	}
}

// A page that declares no charset is read as UTF-8 when it is UTF-8, even
// if its first kilobyte is ASCII (the sniffer looks no further and took
// windows-1252, turning every later "é" into "Ã©"); JSON is UTF-8 by its
// RFC whatever it holds.
func TestWebFetch_UndeclaredUTF8IsNotReadAsWindows1252(t *testing.T) {
	t.Parallel()
	ascii := strings.Repeat("plain ascii words ", 100) // over 1024 bytes
	pages := map[string]struct{ ct, body string }{
		"/late.txt":   {"text/plain", ascii + "café naïve"},
		"/late.html":  {"text/html", "<html><body><p>" + ascii + "</p><p>café naïve</p></body></html>"},
		"/late.json":  {"application/json", `{"pad":"` + ascii + `","word":"café naïve"}`},
		"/early.json": {"application/json", `{"word":"café naïve"}`},
	}
	mux := http.NewServeMux()
	for p, pg := range pages {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", pg.ct)
			io.WriteString(w, pg.body)
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for p := range pages {
		for _, format := range []string{"markdown", "text"} {
			res := fetch(t, Config{Network: openLoopback}, `{"url":"`+srv.URL+p+`","format":"`+format+`"}`)
			if res.Err != nil {
				t.Fatalf("%s (%s): %v", p, format, res.Err)
			}
			if !strings.Contains(res.Content, "café naïve") {
				t.Errorf("%s (%s): the UTF-8 text was not kept: %q", p, format, res.Content[max(0, len(res.Content)-80):])
			}
		}
	}
}

// A body cut at max_bytes inside a UTF-8 character loses that character,
// not gains a U+FFFD in its place.
func TestWebFetch_CutBodyEndsOnACharacter(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	for _, ct := range []string{"text/plain; charset=utf-8", "text/plain", "text/html; charset=utf-8", "text/html"} {
		mux.HandleFunc("/"+strings.NewReplacer("/", "-", "; ", "-", "=", "-").Replace(ct), func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			io.WriteString(w, "abcé€ and more")
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	for _, p := range []string{"text-plain-charset-utf-8", "text-plain", "text-html-charset-utf-8", "text-html"} {
		for max, want := range map[int64]string{4: "abc", 5: "abcé", 6: "abcé", 7: "abcé"} {
			res := fetch(t, Config{Network: openLoopback, MaxBytes: max}, `{"url":"`+srv.URL+"/"+p+`","format":"text"}`)
			if res.Err != nil {
				t.Fatalf("%s: %v", p, res.Err)
			}
			body, _, _ := strings.Cut(strings.SplitN(res.Content, "\n\n", 2)[1], "\n\n[truncated")
			if body != want {
				t.Errorf("%s cut at %d bytes: %q, want %q", p, max, body, want)
			}
			// The note names the cap that cut it (max_output, which it
			// named, is far larger than what is shown).
			if note := fmt.Sprintf("[truncated: the page is longer than web_fetch reads (%d bytes)]", max); !strings.HasSuffix(res.Content, note) {
				t.Errorf("%s cut at %d bytes: %q does not end with %q", p, max, res.Content, note)
			}
		}
	}
}

// The largest max_bytes is a cap like any other: one byte more than it (to
// tell a cut body) overflowed into a negative limit, and every page read
// back empty, reported as a success.
func TestWebFetch_LargestMaxBytes(t *testing.T) {
	t.Parallel()
	srv := site(t)
	for _, max := range []int64{math.MaxInt64, math.MaxInt64 - 1} {
		res := fetch(t, Config{Network: openLoopback, MaxBytes: max}, `{"url":"`+srv.URL+`/data.json"}`)
		if res.Err != nil || !strings.Contains(res.Content, `{"ok":true}`) {
			t.Errorf("max_bytes %d: %q, %v", max, res.Content, res.Err)
		}
	}
}

// A Content-Type whose type is plain but whose parameters are malformed
// ("text/html; charset", a stray ";") was refused as unsupported content,
// a page any browser shows; its type is used and the parameters ignored.
func TestWebFetch_MalformedContentTypeParameters(t *testing.T) {
	t.Parallel()
	for _, ct := range []string{"text/html; charset", "text/html;;", "text/plain; charset:utf-8", "text/html; charset=utf 8"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ct)
			io.WriteString(w, "<p>café page</p>")
		}))
		res := fetch(t, Config{Network: openLoopback}, `{"url":"`+srv.URL+`","format":"text"}`)
		srv.Close()
		if res.Err != nil || !strings.Contains(res.Content, "café page") {
			t.Errorf("Content-Type %q: %q, %v", ct, res.Content, res.Err)
		}
	}
	// A type that does not parse at all is still refused.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html,text/plain")
		io.WriteString(w, "<p>page</p>")
	}))
	defer srv.Close()
	if res := fetch(t, Config{Network: openLoopback}, `{"url":"`+srv.URL+`"}`); !errors.Is(res.Err, ErrUnsupportedContent) {
		t.Errorf("an unparsable type: %q, %v", res.Content, res.Err)
	}
}
