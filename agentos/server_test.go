package agentos

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/run"
)

func TestHealth_ReportsOK(t *testing.T) {
	t.Parallel()
	ts, _ := testServer(t, Config{}, nil)
	res := get(t, ts.URL+"/health", nil)
	var body map[string]string
	if err := json.Unmarshal([]byte(res.body), &body); err != nil {
		t.Fatal(err)
	}
	if res.status != 200 || body["status"] != "ok" || body["instantiated_at"] == "" {
		t.Fatalf("GET /health = %d %s", res.status, res.body)
	}
	if f, err := strconv.ParseFloat(body["instantiated_at"], 64); err != nil || time.Since(time.Unix(int64(f), 0)) > time.Minute {
		t.Errorf("instantiated_at = %q, want a recent unix timestamp string", body["instantiated_at"])
	}
}

func TestRouter_UnknownRouteAndMethodAnswerDetail(t *testing.T) {
	t.Parallel()
	ts, _ := testServer(t, Config{}, nil)
	tests := []struct {
		method, path string
		status       int
		detail       string
	}{
		{"GET", "/nope", 404, "Not Found"},
		{"DELETE", "/health", 405, "Method Not Allowed"},
	}
	for _, tt := range tests {
		res := do(t, tt.method, ts.URL+tt.path, nil, nil)
		if res.status != tt.status || res.detail(t) != tt.detail || res.header.Get("Content-Type") != "application/json" {
			t.Errorf("%s %s = %d %q", tt.method, tt.path, res.status, res.body)
		}
	}
}

func TestRequestID_EchoedOrGenerated(t *testing.T) {
	t.Parallel()
	ts, logs := testServer(t, Config{}, nil)
	tests := []struct {
		name, in string
		keep     bool
	}{
		{"well-formed id is kept", "req-123_abc.9", true},
		{"missing id is generated", "", false},
		{"id with spaces is replaced", "bad id", false},
		{"overlong id is replaced", strings.Repeat("a", 200), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := map[string]string{}
			if tt.in != "" {
				h[RequestIDHeader] = tt.in
			}
			got := get(t, ts.URL+"/health", h).header.Get(RequestIDHeader)
			if tt.keep && got != tt.in {
				t.Errorf("id = %q, want %q", got, tt.in)
			}
			if !tt.keep && (got == "" || got == tt.in || !validRequestID(got)) {
				t.Errorf("id = %q, want a fresh one", got)
			}
			if !strings.Contains(logs.String(), `"request_id":"`+got+`"`) {
				t.Errorf("access log lacks request id %s", got)
			}
		})
	}
}

func TestAccessLog_HasFieldsButNoSecrets(t *testing.T) {
	t.Parallel()
	ts, logs := testServer(t, Config{}, nil)
	get(t, ts.URL+"/health?token=sekrit-query", map[string]string{"Authorization": "Bearer sekrit-header", RequestIDHeader: "log-test"})
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(l, `"log-test"`) {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	if line["method"] != "GET" || line["path"] != "/health" || line["status"] != float64(200) || line["bytes"].(float64) <= 0 || line["duration"] == nil {
		t.Errorf("access log line = %v", line)
	}
	if strings.Contains(logs.String(), "sekrit") {
		t.Error("log contains the token")
	}
}

func TestRecover_PanicBecomes500WithRequestIDLogged(t *testing.T) {
	t.Parallel()
	ts, logs := testServer(t, Config{}, func(s *Server) {
		s.router.Get("/boom", func(http.ResponseWriter, *http.Request) { panic("kaboom") })
		s.router.Get("/boom-mid-stream", func(w http.ResponseWriter, _ *http.Request) {
			sw := newSSEWriter(w)
			_ = sw.WriteEvent(&run.Event{Event: run.EventRunStarted})
			panic("mid-stream kaboom")
		})
	})
	res := get(t, ts.URL+"/boom", map[string]string{RequestIDHeader: "panic-1"})
	if res.status != 500 || res.detail(t) != "internal server error" {
		t.Fatalf("GET /boom = %d %s", res.status, res.body)
	}
	if !contains(logs.String(), "panic serving request", `"request_id":"panic-1"`, "kaboom") {
		t.Errorf("panic not logged with request id: %s", logs.String())
	}
	if res := get(t, ts.URL+"/health", nil); res.status != 200 {
		t.Errorf("server unhealthy after panic: %d", res.status)
	}
	res2, err := http.Get(ts.URL + "/boom-mid-stream")
	if err != nil {
		t.Fatal(err)
	}
	defer res2.Body.Close()
	if _, err := io.ReadAll(res2.Body); err == nil {
		t.Error("a panic after the response started ended the body cleanly; want an aborted connection")
	}
	if !strings.Contains(logs.String(), "mid-stream kaboom") {
		t.Error("mid-stream panic not logged")
	}
}

func TestBodyLimit_OverLimitIs413(t *testing.T) {
	t.Parallel()
	ts, _ := testServer(t, Config{BodyLimit: 1024}, func(s *Server) {
		s.router.Post("/echo", func(w http.ResponseWriter, r *http.Request) {
			data, err := io.ReadAll(r.Body)
			if err != nil {
				writeErr(w, r, s.log, err)
				return
			}
			writeJSON(w, 200, map[string]int{"n": len(data)})
		})
	})
	tests := []struct {
		name   string
		body   io.Reader
		status int
	}{
		{"under the limit", strings.NewReader(strings.Repeat("a", 1024)), 200},
		{"declared length over the limit", strings.NewReader(strings.Repeat("a", 1025)), 413},
		{"chunked body over the limit", io.MultiReader(strings.NewReader(strings.Repeat("a", 2048))), 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := do(t, "POST", ts.URL+"/echo", tt.body, nil)
			if res.status != tt.status {
				t.Fatalf("status %d (%s), want %d", res.status, res.body, tt.status)
			}
			if tt.status == 413 && !strings.Contains(res.detail(t), "1024") {
				t.Errorf("detail %q does not name the limit", res.body)
			}
		})
	}
}

func TestCORS_PreflightsAndSimpleRequests(t *testing.T) {
	t.Parallel()
	ts, _ := testServer(t, Config{}, nil)
	star, _ := testServer(t, Config{CORSOrigins: []string{"*"}}, nil)
	tests := []struct {
		name       string
		url        string
		method     string
		header     map[string]string
		status     int
		allowOrig  string
		allowHdrs  string
		wantMethod bool
	}{
		{"preflight from default origin", ts.URL + "/health", "OPTIONS",
			map[string]string{"Origin": "http://localhost:3000", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "content-type, authorization"},
			200, "http://localhost:3000", "content-type, authorization", true},
		{"preflight from the default loopback origin", ts.URL + "/sessions", "OPTIONS",
			map[string]string{"Origin": "http://127.0.0.1:3000", "Access-Control-Request-Method": "GET"},
			200, "http://127.0.0.1:3000", "", true},
		{"preflight of a protected route is not authenticated", ts.URL + "/agents", "OPTIONS",
			map[string]string{"Origin": "http://localhost:3000", "Access-Control-Request-Method": "POST"},
			200, "http://localhost:3000", "", true},
		{"preflight from another origin", ts.URL + "/health", "OPTIONS",
			map[string]string{"Origin": "https://evil.test", "Access-Control-Request-Method": "GET"}, 400, "", "", false},
		{"simple request from allowed origin", ts.URL + "/health", "GET",
			map[string]string{"Origin": "http://localhost:3000"}, 200, "http://localhost:3000", "", false},
		{"simple request from another origin", ts.URL + "/health", "GET",
			map[string]string{"Origin": "https://evil.test"}, 200, "", "", false},
		{"wildcard echoes the origin", star.URL + "/health", "OPTIONS",
			map[string]string{"Origin": "https://any.test", "Access-Control-Request-Method": "DELETE"}, 200, "https://any.test", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := do(t, tt.method, tt.url, nil, tt.header)
			h := res.header
			if res.status != tt.status || h.Get("Access-Control-Allow-Origin") != tt.allowOrig {
				t.Fatalf("status %d, allow-origin %q; headers %v", res.status, h.Get("Access-Control-Allow-Origin"), h)
			}
			if !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
				t.Errorf("Vary = %v", h.Values("Vary"))
			}
			if tt.allowOrig != "" && h.Get("Access-Control-Allow-Credentials") != "true" {
				t.Errorf("credentials not allowed")
			}
			if h.Get("Access-Control-Allow-Headers") != tt.allowHdrs {
				t.Errorf("allow-headers = %q", h.Get("Access-Control-Allow-Headers"))
			}
			if m := tt.header["Access-Control-Request-Method"]; m != "" && tt.wantMethod != strings.Contains(h.Get("Access-Control-Allow-Methods"), m) {
				t.Errorf("allow-methods = %q", h.Get("Access-Control-Allow-Methods"))
			}
		})
	}
}

func TestServe_GracefulShutdownFinishesInFlightRequests(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	s, err := New(Config{ShutdownTimeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.router.Get("/slow", func(w http.ResponseWriter, r *http.Request) {
		close(started)
		time.Sleep(200 * time.Millisecond)
		writeJSON(w, 200, map[string]string{"done": "yes"})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	got := make(chan response, 1)
	go func() {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			got <- response{}
			return
		}
		defer conn.Close()
		_, _ = io.WriteString(conn, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			got <- response{}
			return
		}
		body, _ := io.ReadAll(res.Body)
		got <- response{status: res.StatusCode, body: string(body)}
	}()
	<-started
	cancel()
	if res := <-got; res.status != 200 || !strings.Contains(res.body, "yes") {
		t.Errorf("in-flight request = %d %q", res.status, res.body)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve: %v", err)
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
		t.Error("still accepting after shutdown")
	}
}

func TestServe_WarnsWhenOpenOnANonLoopbackAddress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		addr string
		auth bool
		warn bool
	}{
		{"open on all interfaces", "0.0.0.0:0", false, true},
		{"open on loopback", "127.0.0.1:0", false, false},
		{"authenticated on all interfaces", "0.0.0.0:0", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logs := &syncBuffer{}
			cfg := Config{Logger: slog.New(slog.NewJSONHandler(logs, nil))}
			if tt.auth {
				cfg.Auth.Authenticator = jwtAuthenticator(t, "")
			}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", tt.addr)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := s.Serve(ctx, ln); err != nil {
				t.Fatal(err)
			}
			var warned bool
			for line := range strings.Lines(logs.String()) {
				var rec struct {
					Level, Msg, Addr string
				}
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("log line %q: %v", line, err)
				}
				if rec.Level == "WARN" && strings.Contains(rec.Msg, "without authentication") {
					warned = true
					if rec.Addr != ln.Addr().String() {
						t.Errorf("warning addr = %q, want %q", rec.Addr, ln.Addr())
					}
				}
			}
			if warned != tt.warn {
				t.Errorf("warned = %v, want %v; logs:\n%s", warned, tt.warn, logs)
			}
		})
	}
}
