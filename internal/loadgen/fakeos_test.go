package loadgen

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// outcome is what the fake AgentOS does with one run request.
type outcome int

const (
	ok             outcome = iota
	status500              // {"detail"} with 500
	badJSON                // 200 with a body that is not JSON
	runStatusError         // 200 run JSON with status ERROR
	streamRunError         // 200 stream: RunStarted, RunError
	streamTruncate         // 200 stream: RunStarted, RunContent, then EOF
	streamNoStart          // 200 stream opening with RunContent
	wrongType              // 200 JSON where a stream was asked for
	hangUp                 // connection closed without a response
	block                  // waits for the client to go away
)

// fakeOS mimics AgentOS's POST /agents/{id}/runs wire format: the run as JSON
// for stream=false, SSE frames "event: X\ndata: {...}\n\n" for stream=true.
type fakeOS struct {
	// decide picks the outcome of the n-th request (1-based); nil means ok.
	decide func(n int) outcome
	// token, when set, is the required bearer token.
	token string
	// delay is slept between RunStarted and RunCompleted (or before the JSON).
	delay time.Duration
	// arrived receives once per request, if non-nil (buffered by the test).
	arrived chan struct{}

	mu       sync.Mutex
	calls    int
	sessions map[string]int // session_id sent (empty: none) → requests
	bad      []string       // wire mistakes by the client
}

func newFakeOS(t testing.TB, f *fakeOS) string {
	t.Helper()
	f.sessions = map[string]int{}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv.URL
}

func (f *fakeOS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.mu.Unlock()
	if f.arrived != nil {
		select {
		case f.arrived <- struct{}{}:
		default:
		}
	}
	if r.Method != http.MethodPost || r.URL.Path != "/agents/echo/runs" {
		f.mistake(fmt.Sprintf("%s %s", r.Method, r.URL.Path))
		http.NotFound(w, r)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
		f.mistake("content type " + ct)
	}
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"detail": "Authorization header required"})
		return
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("message") == "" {
		f.mistake("form without message")
	}
	stream := r.PostForm.Get("stream") == "true"
	sid := r.PostForm.Get("session_id")
	f.mu.Lock()
	f.sessions[sid]++
	f.mu.Unlock()
	if sid == "" {
		sid = fmt.Sprintf("session-%d", n)
	}
	runID := fmt.Sprintf("run-%d", n)

	oc := ok
	if f.decide != nil {
		oc = f.decide(n)
	}
	switch oc {
	case status500:
		writeJSON(w, http.StatusInternalServerError, map[string]any{"detail": "boom"})
		return
	case hangUp:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	case block:
		<-r.Context().Done()
		return
	}
	if !stream || oc == wrongType {
		time.Sleep(f.delay)
		switch oc {
		case badJSON:
			w.WriteHeader(http.StatusOK)
			fmt.Fprint(w, "<html>not a run</html>")
		case runStatusError:
			writeJSON(w, http.StatusOK, map[string]any{"run_id": runID, "session_id": sid, "status": "ERROR", "content": "model exploded"})
		default:
			writeJSON(w, http.StatusOK, map[string]any{"run_id": runID, "session_id": sid, "agent_id": "echo", "status": "COMPLETED", "content": "hello"})
		}
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	frame := func(name string, extra map[string]any) {
		ev := map[string]any{"event": name, "created_at": time.Now().Unix(), "agent_id": "echo", "run_id": runID, "session_id": sid}
		for k, v := range extra {
			ev[k] = v
		}
		data, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		http.NewResponseController(w).Flush()
	}
	if oc == streamNoStart {
		frame("RunContent", map[string]any{"content": "hel"})
		return
	}
	frame("RunStarted", map[string]any{"model": "scripted"})
	time.Sleep(f.delay)
	switch oc {
	case streamRunError:
		frame("RunError", map[string]any{"content": "tool failed", "error_type": "ToolError"})
	case streamTruncate:
		frame("RunContent", map[string]any{"content": "hel"})
	default:
		frame("RunContent", map[string]any{"content": "hel", "content_type": "str"})
		frame("RunContent", map[string]any{"content": "lo", "content_type": "str"})
		frame("RunCompleted", map[string]any{"content": "hello"})
	}
}

func (f *fakeOS) mistake(s string) {
	f.mu.Lock()
	f.bad = append(f.bad, s)
	f.mu.Unlock()
}

// snapshot returns the request count, sessions seen and client mistakes.
func (f *fakeOS) snapshot() (int, map[string]int, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := make(map[string]int, len(f.sessions))
	for k, v := range f.sessions {
		s[k] = v
	}
	return f.calls, s, append([]string(nil), f.bad...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
