package httpreq

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/tool/netguard"
)

var openLoopback = netguard.Config{AllowNetworks: []string{"127.0.0.0/8"}}

func api(t *testing.T) (*httptest.Server, string) {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{
			"method": r.Method, "body": string(b), "auth": r.Header.Get("Authorization"), "x": r.Header.Get("X-Trace"),
		})
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("z", 3<<20)))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return srv, port
}

func newSet(t *testing.T, cfg Config) *tool.Set {
	t.Helper()
	kit, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	set, err := tool.NewSet(nil, kit)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func send(set *tool.Set, args string) tool.Result {
	return set.Execute(context.Background(), model.ToolCall{ID: "c", Name: "http_request", Arguments: args})
}

func TestHTTPRequest_SendsToAnAllowedHost(t *testing.T) {
	t.Parallel()
	srv, _ := api(t)
	set := newSet(t, Config{AllowedHosts: []string{"127.0.0.1"}, Network: openLoopback, Headers: map[string]string{"Authorization": "Bearer cfg-token"},
		HeadersOverHTTP: true})
	res := send(set, `{"method":"POST","url":"`+srv.URL+`/echo","headers":{"X-Trace":"t1","Content-Type":"application/json"},"body":"{\"a\":1}"}`)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	var got struct {
		StatusCode int               `json:"status_code"`
		Body       map[string]string `json:"body"`
	}
	if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
		t.Fatalf("%s: %v", res.Content, err)
	}
	want := map[string]string{"method": "POST", "body": `{"a":1}`, "auth": "Bearer cfg-token", "x": "t1"}
	for k, v := range want {
		if got.Body[k] != v {
			t.Errorf("%s = %q, want %q (%s)", k, got.Body[k], v, res.Content)
		}
	}
	if got.StatusCode != 200 {
		t.Errorf("status %d", got.StatusCode)
	}
}

func TestHTTPRequest_BadInput(t *testing.T) {
	t.Parallel()
	srv, port := api(t)
	// The outer server is allowed and redirects to 127.0.0.1, which is not.
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Fatal(err)
	}
	redirector := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+"/echo", http.StatusFound)
	}))
	redirector.Listener = ln
	redirector.Start()
	t.Cleanup(redirector.Close)

	open := newSet(t, Config{AllowedHosts: []string{"127.0.0.1", "127.0.0.2"}, Network: openLoopback, Methods: []string{"GET", "POST"},
		Headers: map[string]string{"Authorization": "Bearer cfg"}, HeadersOverHTTP: true, MaxRequestBytes: 1000, MaxResponseBytes: 1 << 20, Timeout: 300 * time.Millisecond})
	onlyRedirector := newSet(t, Config{AllowedHosts: []string{"127.0.0.2"}, Network: openLoopback})
	guarded := newSet(t, Config{AllowedHosts: []string{"localhost", "127.0.0.1"}, Network: netguard.Config{Ports: []uint16{80, 443, mustPort(port)}}})
	tests := []struct {
		name string
		set  *tool.Set
		args string
		want string
	}{
		{"host not allowed", open, `{"method":"GET","url":"http://example.com/"}`, "host not allowed"},
		{"ssrf: allowed name resolving to loopback", guarded, `{"method":"GET","url":"http://localhost:` + port + `/echo"}`, "not a public destination"},
		{"ssrf: loopback literal", guarded, `{"method":"GET","url":"` + srv.URL + `/echo"}`, "not a public destination"},
		{"ssrf: metadata address", guarded, `{"method":"GET","url":"http://169.254.169.254/"}`, "not a public destination"},
		{"redirect to a host not allowed", onlyRedirector, `{"method":"GET","url":"` + redirector.URL + `/"}`, "host not allowed"},
		{"file scheme", open, `{"method":"GET","url":"file:///etc/passwd"}`, "only http and https"},
		{"method not allowed", open, `{"method":"DELETE","url":"` + srv.URL + `/echo"}`, "not allowed"},
		{"unknown method", open, `{"method":"TRACE","url":"` + srv.URL + `/echo"}`, "invalid arguments"},
		{"Host header", open, `{"method":"GET","url":"` + srv.URL + `/echo","headers":{"host":"internal"}}`, "set by the HTTP client"},
		{"overriding the configured credentials", open, `{"method":"GET","url":"` + srv.URL + `/echo","headers":{"authorization":"Bearer mine"}}`, "set by the configuration"},
		{"header injection", open, `{"method":"GET","url":"` + srv.URL + `/echo","headers":{"X-A":"1\r\nX-Injected: 1"}}`, "line break"},
		{"huge request body", open, `{"method":"POST","url":"` + srv.URL + `/echo","body":"` + strings.Repeat("b", 5000) + `"}`, "at most 1000"},
		{"slow server", open, `{"method":"GET","url":"` + srv.URL + `/slow"}`, "did not finish"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := send(tc.set, tc.args)
			if res.Err == nil || !strings.Contains(res.Content, tc.want) {
				t.Fatalf("content %.300q, err %v; want an error containing %q", res.Content, res.Err, tc.want)
			}
		})
	}
	capped := newSet(t, Config{AllowedHosts: []string{"127.0.0.1"}, Network: openLoopback, MaxResponseBytes: 1 << 20})
	res := send(capped, `{"method":"GET","url":"`+srv.URL+`/huge"}`)
	var out Response
	if res.Err != nil || json.Unmarshal([]byte(res.Content), &out) != nil || !out.Truncated || len(out.Body) != 1<<20 {
		t.Errorf("huge response: err %v, truncated %v, %d bytes", res.Err, out.Truncated, len(out.Body))
	}
}

func TestNew_RefusesBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{}, {AllowedHosts: []string{"http://x.com"}}, {AllowedHosts: []string{"x.com:80"}}, {AllowedHosts: []string{"a.*.com"}},
		{AllowedHosts: []string{"x.com"}, Methods: []string{"TRACE"}}, {AllowedHosts: []string{"x.com"}, Network: netguard.Config{AllowNetworks: []string{"lan"}}}} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func mustPort(s string) uint16 {
	var p uint16
	for _, c := range s {
		p = p*10 + uint16(c-'0')
	}
	return p
}

// Configured headers that the HTTP client drops or replaces (Host,
// Content-Length, ...) did nothing, silently; one holding a line break
// made every call fail; two spellings of one header raced for the value.
// Each is now refused when the toolkit is made.
func TestNew_RefusesHeadersThatCannotBeSent(t *testing.T) {
	t.Parallel()
	for _, h := range []map[string]string{
		{"Host": "internal.example"},
		{"content-length": "10"},
		{"Transfer-Encoding": "chunked"},
		{"Connection": "close"},
		{"X-Key": "a\r\nX-Injected: 1"},
		{"X Key": "a"},
		{"": "a"},
		{"Authorization": "Bearer a", "authorization": "Bearer b"},
	} {
		if _, err := New(Config{AllowedHosts: []string{"x.com"}, Headers: h}); err == nil {
			t.Errorf("headers %q accepted", h)
		}
	}
	if _, err := New(Config{AllowedHosts: []string{"x.com"}, Headers: map[string]string{"Authorization": "Bearer a", "x-api-key": "k"}}); err != nil {
		t.Errorf("ordinary headers refused: %v", err)
	}
}

// An allowed_hosts entry written as a fully qualified name, with its
// trailing dot ("api.example.com."), was accepted but matched nothing: the
// URL's host is compared without its trailing dot, the entry was not.
func TestNew_AllowedHostWithTrailingDot(t *testing.T) {
	t.Parallel()
	_, port := api(t)
	loopback := netguard.Config{AllowNetworks: []string{"127.0.0.0/8", "::1/128"}}
	for _, entry := range []string{"localhost.", "LocalHost."} {
		set := newSet(t, Config{AllowedHosts: []string{entry}, Network: loopback})
		if res := send(set, `{"method":"POST","url":"http://localhost:`+port+`/echo"}`); res.Err != nil {
			t.Errorf("entry %q: %v", entry, res.Err)
		}
	}
	if _, err := New(Config{AllowedHosts: []string{"*."}}); err == nil {
		t.Error(`the entry "*." (no domain) was accepted`)
	}
}

// MaxResponseBytes at its largest (math.MaxInt64, "no cap") overflowed the
// read limit (cap+1) to a negative number: every response came back with
// an empty body, silently.
func TestHTTPRequest_LargestResponseCap(t *testing.T) {
	t.Parallel()
	srv, _ := api(t)
	set := newSet(t, Config{AllowedHosts: []string{"127.0.0.1"}, Network: openLoopback, MaxResponseBytes: math.MaxInt64})
	res := send(set, `{"method":"POST","url":"`+srv.URL+`/echo","body":"hi"}`)
	var out struct {
		Body map[string]string `json:"body"`
	}
	if res.Err != nil || json.Unmarshal([]byte(res.Content), &out) != nil || out.Body["body"] != "hi" {
		t.Fatalf("response %s, err %v: want the echoed body", res.Content, res.Err)
	}
}

// The model's headers are a JSON object: one header under two spellings
// ("x-trace" and "X-Trace") went out with whichever value map order set
// last. It is refused, as the configuration's duplicates are.
func TestHTTPRequest_RefusesAHeaderUnderTwoSpellings(t *testing.T) {
	t.Parallel()
	srv, _ := api(t)
	set := newSet(t, Config{AllowedHosts: []string{"127.0.0.1"}, Network: openLoopback})
	res := send(set, `{"method":"GET","url":"`+srv.URL+`/echo","headers":{"x-trace":"a","X-Trace":"b"}}`)
	if res.Err == nil || !strings.Contains(res.Content, "twice") {
		t.Fatalf("content %s, err %v: want the duplicate refused", res.Content, res.Err)
	}
}

// Config.Methods limits the methods the tool sends, but a redirect could
// change the method: a 303 (or a 301/302 to a POST) is followed with GET,
// which went out although only POST was allowed. Such a redirect is
// refused; one keeping an allowed method is followed.
func TestHTTPRequest_RedirectKeepsToTheAllowedMethods(t *testing.T) {
	t.Parallel()
	srv, _ := api(t)
	gets := make(chan string, 4)
	mux := http.NewServeMux()
	mux.HandleFunc("/see-other", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/landing", http.StatusSeeOther)
	})
	mux.HandleFunc("/temporary", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+"/echo", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/landing", func(w http.ResponseWriter, r *http.Request) {
		gets <- r.Method
		io.WriteString(w, "landed")
	})
	redirector := httptest.NewServer(mux)
	t.Cleanup(redirector.Close)
	set := newSet(t, Config{AllowedHosts: []string{"127.0.0.1"}, Network: openLoopback, Methods: []string{"POST"}})
	res := send(set, `{"method":"POST","url":"`+redirector.URL+`/see-other","body":"x"}`)
	select {
	case m := <-gets:
		t.Fatalf("the redirect was followed with %s: %s", m, res.Content)
	default:
	}
	if res.Err == nil || !strings.Contains(res.Content, "GET") {
		t.Errorf("content %s, err %v: want the redirect's GET refused", res.Content, res.Err)
	}
	if res := send(set, `{"method":"POST","url":"`+redirector.URL+`/temporary","body":"x"}`); res.Err != nil || !strings.Contains(res.Content, `"method":"POST"`) {
		t.Errorf("307 keeping POST: content %s, err %v", res.Content, res.Err)
	}
}

// TestHTTPRequest_ConfiguredHeadersGoOverHTTPSOnly: the configured Headers
// (an Authorization token) went out on a plain http URL the model asked
// for, and after a redirect from https down to http on an allowed host
// (Go's client keeps Authorization on a same-host redirect): anyone on the
// path read them. Both are refused unless HeadersOverHTTP, and nothing
// reaches the http server; without Headers plain http is fine.
func TestHTTPRequest_ConfiguredHeadersGoOverHTTPSOnly(t *testing.T) {
	t.Parallel()
	var plainHits atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		plainHits.Add(1)
		fmt.Fprintf(w, "auth=%s", r.Header.Get("Authorization"))
	}))
	t.Cleanup(plain.Close)
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/down", http.StatusFound)
	}))
	t.Cleanup(secure.Close)
	withHeaders := Config{AllowedHosts: []string{"127.0.0.1"}, Network: openLoopback, Headers: map[string]string{"Authorization": "Bearer secret"}}
	requester := func(cfg Config) *requester {
		r, err := newRequester(cfg)
		if err != nil {
			t.Fatal(err)
		}
		// trust the TLS test server's certificate
		r.client.Transport.(*http.Transport).TLSClientConfig = secure.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
		return r
	}
	ctx := context.Background()
	r := requester(withHeaders)
	if _, err := r.do(ctx, requestIn{Method: "GET", URL: plain.URL + "/x"}); !errors.Is(err, errHeadersOverHTTP) {
		t.Errorf("plain http with configured headers: %v", err)
	}
	if _, err := r.do(ctx, requestIn{Method: "GET", URL: secure.URL + "/x"}); !errors.Is(err, errHeadersOverHTTP) {
		t.Errorf("https redirected down to http with configured headers: %v", err)
	}
	if n := plainHits.Load(); n != 0 {
		t.Errorf("the plain http server got %d requests, want none", n)
	}
	opted := withHeaders
	opted.HeadersOverHTTP = true
	if res, err := requester(opted).do(ctx, requestIn{Method: "GET", URL: secure.URL + "/x"}); err != nil || res.Body != "auth=Bearer secret" {
		t.Errorf("with HeadersOverHTTP: %+v, %v", res, err)
	}
	bare := withHeaders
	bare.Headers = nil
	if res, err := requester(bare).do(ctx, requestIn{Method: "GET", URL: plain.URL + "/x"}); err != nil || res.Body != "auth=" {
		t.Errorf("plain http without configured headers: %+v, %v", res, err)
	}
}

// A body in the charset its Content-Type names is returned as that text in
// UTF-8 (as Agno's requests-based tool returns response.text), not with
// every byte beyond ASCII turned into U+FFFD.
func TestHTTPRequest_BodyIsDecodedFromItsCharset(t *testing.T) {
	t.Parallel()
	bodies := map[string]struct{ ct, body, want string }{
		"/latin1": {"text/plain; charset=iso-8859-1", "caf\xe9", "café"},
		"/cp1252": {"text/plain; charset=windows-1252", "\x80 5", "€ 5"},
		"/sjis":   {"text/plain; charset=Shift_JIS", "\x93\xfa\x96\x7b", "日本"},
		"/utf8":   {"text/plain; charset=utf-8", "café", "café"},
		"/none":   {"text/plain", "café", "café"},
		"/json":   {"application/json; charset=iso-8859-1", `{"w":"caf` + "\xe9" + `"}`, `{"w":"café"}`},
	}
	mux := http.NewServeMux()
	for p, b := range bodies {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", b.ct)
			io.WriteString(w, b.body)
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	set := newSet(t, Config{AllowedHosts: []string{"127.0.0.1"}, Network: openLoopback})
	for p, b := range bodies {
		res := send(set, `{"method":"GET","url":"`+srv.URL+p+`"}`)
		if res.Err != nil {
			t.Fatalf("%s: %v", p, res.Err)
		}
		var got struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
			t.Fatal(err)
		}
		body := string(got.Body)
		if s := ""; json.Unmarshal(got.Body, &s) == nil {
			body = s
		}
		if body != b.want {
			t.Errorf("%s (%s): body %q, want %q", p, b.ct, body, b.want)
		}
	}
}

// A body cut at max_response_bytes inside a UTF-8 character loses that
// character instead of ending in U+FFFD.
func TestHTTPRequest_CutBodyEndsOnACharacter(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "abcé€ and more")
	}))
	t.Cleanup(srv.Close)
	for max, want := range map[int64]string{3: "abc", 4: "abc", 5: "abcé", 6: "abcé", 7: "abcé", 8: "abcé€"} {
		set := newSet(t, Config{AllowedHosts: []string{"127.0.0.1"}, Network: openLoopback, MaxResponseBytes: max})
		res := send(set, `{"method":"GET","url":"`+srv.URL+`/"}`)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		var got Response
		if err := json.Unmarshal([]byte(res.Content), &got); err != nil {
			t.Fatal(err)
		}
		if got.Body != want || !got.Truncated {
			t.Errorf("cut at %d bytes: body %q (truncated %v), want %q (truncated)", max, got.Body, got.Truncated, want)
		}
	}
}

// The HTTP client asks for gzip and decodes it; a model's own
// Accept-Encoding turned that off, and a compressed body came back as
// replacement characters, reported as a success.
func TestHTTPRequest_AcceptEncodingIsTheClients(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			io.WriteString(zw, "plain words")
			zw.Close()
			return
		}
		io.WriteString(w, "plain words")
	}))
	t.Cleanup(srv.Close)
	set := newSet(t, Config{AllowedHosts: []string{"127.0.0.1"}, Network: openLoopback})
	res := send(set, `{"method":"GET","url":"`+srv.URL+`/"}`)
	if res.Err != nil || !strings.Contains(res.Content, "plain words") {
		t.Fatalf("without Accept-Encoding: %v %s", res.Err, res.Content)
	}
	for _, ae := range []string{"gzip", "gzip, deflate, br", "identity"} {
		res := send(set, `{"method":"GET","url":"`+srv.URL+`/","headers":{"accept-encoding":"`+ae+`"}}`)
		if res.Err == nil || !strings.Contains(res.Err.Error(), "Accept-Encoding") {
			t.Errorf("Accept-Encoding %q: want an error naming the header, got %v %q", ae, res.Err, res.Content)
		}
	}
	if _, err := New(Config{AllowedHosts: []string{"h"}, Headers: map[string]string{"Accept-Encoding": "br"}}); err == nil {
		t.Error("a configured Accept-Encoding was taken")
	}
}
