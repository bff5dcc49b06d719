package loadgen

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// streamServer answers every run request with body as an SSE stream.
func streamServer(t *testing.T, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

const started = "event: RunStarted\ndata: {\"session_id\":\"s\"}\n\n"

// A stream whose RunCompleted's lines all ended but that closed before a
// blank line delivered the whole event (internal/sse dispatches it): the
// run completed, and was counted as a stream cut off inside an event.
func TestRun_StreamEndingWithoutItsLastBlankLineCompletes(t *testing.T) {
	t.Parallel()
	url := streamServer(t, started+"event: RunCompleted\ndata: {\"content\":\"hi\"}\n")
	rep, err := Run(testCtx(t), Config{BaseURL: url, AgentID: "echo", Concurrency: 1, Requests: 3, Stream: true})
	if err != nil || rep.Successes != 3 || rep.Failures.Total() != 0 {
		t.Fatalf("Run: %v; successes %d, failures %s (errors %v); want 3 completed runs", err, rep.Successes, rep.Failures, rep.Errors)
	}
}

// An event whose data passes the reader's limit is a bad body, as a line
// past it is, not a transport failure: the server answered.
func TestWorker_OversizedEventIsABadBody(t *testing.T) {
	t.Parallel()
	url := streamServer(t, started+strings.Repeat("data: "+strings.Repeat("z", 200)+"\n", 10)+"\n")
	cfg, runs, err := Config{BaseURL: url, AgentID: "echo", Stream: true}.normalized()
	if err != nil {
		t.Fatal(err)
	}
	w := newWorker(&cfg, runs, http.DefaultClient)
	w.frames = newFrameReader(1 << 10)
	if res := w.do(testCtx(t)); res.kind != resultBadBody || !strings.Contains(res.msg, "too large") {
		t.Fatalf("result %+v; want a bad body naming the event's size", res)
	}
}
