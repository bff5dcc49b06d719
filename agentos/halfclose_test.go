package agentos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// halfClosedPost sends a urlencoded POST, half-closes the connection (no
// more writes: Go's server then cancels the request's context) and reads the
// answer.
func halfClosedPost(t *testing.T, base, path, body string) (int, string) {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: %d\r\n\r\n%s", path, u.Host, len(body), body)
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, "" // the server closed without answering: not a server error
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestHalfClosedClient_IsNeverA5xx sends run requests whose client
// half-closes its connection right after the body: whatever the race with
// the run, the answer is never a server error (background submissions were
// 500 about one time in ten: the PENDING row was written with the
// cancelled request context).
func TestHalfClosedClient_IsNeverA5xx(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	f := newRunsFixture(t, Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	bodies := []string{
		"message=hi&stream=false",
		"message=hi&stream=true",
		"message=hi&stream=false&session_id=half-closed",
		"message=hi&background=true",
		"message=hi&background=true&session_id=half-closed-bg",
	}
	const rounds = 30
	var bad []string
	for i := range rounds {
		for _, body := range bodies {
			status, resp := halfClosedPost(t, f.url, "/agents/echo/runs", body)
			if status >= 500 {
				bad = append(bad, fmt.Sprintf("round %d %s: %d %s", i, body, status, resp))
			}
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%d of %d half-closed requests got a server error:\n%s", len(bad), rounds*len(bodies), strings.Join(bad, "\n"))
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Fatalf("a closed client was logged as a server error:\n%s", logs.String())
	}
}

// TestWriteErr_ClientGoneIs499NotA500: an error that is the request's own
// cancellation is answered and logged as 499 (client closed request), at
// info level; the same error while the client is still there is a 500.
func TestWriteErr_ClientGoneIs499NotA500(t *testing.T) {
	t.Parallel()
	var logs syncBuffer
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	ctx, cancel := context.WithCancel(context.Background())
	r := httptest.NewRequest(http.MethodPost, "/agents/a/runs", nil).WithContext(ctx)
	cancel()
	w := httptest.NewRecorder()
	writeErr(w, r, log, fmt.Errorf("store pending run: %w", context.Canceled))
	if w.Code != statusClientClosedRequest || strings.Contains(logs.String(), "ERROR") || !strings.Contains(logs.String(), "client closed request") {
		t.Fatalf("cancelled request: status %d, log %s", w.Code, logs.String())
	}
	w = httptest.NewRecorder()
	writeErr(w, httptest.NewRequest(http.MethodPost, "/agents/a/runs", nil), log, fmt.Errorf("store pending run: %w", context.Canceled))
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("a cancellation that is not the client's: status %d", w.Code)
	}
}
