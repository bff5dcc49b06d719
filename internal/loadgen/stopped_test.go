package loadgen

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// A run given both Requests and Duration whose last request was issued
// before the deadline but answered after it made every request asked for,
// so it stopped at the request count; it was reported as stopped by the
// duration (whether any worker took a ticket after the last one decided).
func TestRun_AllRequestsIssuedIsStoppedByRequests(t *testing.T) {
	t.Parallel()
	const duration = time.Second
	arrived, release := make(chan struct{}), make(chan struct{})
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 2 {
			close(arrived)
			<-release
		}
		writeJSON(w, http.StatusOK, map[string]any{"run_id": "r", "session_id": "s", "status": "COMPLETED"})
	}))
	t.Cleanup(srv.Close)
	go func() {
		<-arrived
		// The measured phase began before this request was sent: after
		// this long its deadline has passed.
		time.Sleep(duration + 50*time.Millisecond)
		close(release)
	}()
	rep, err := Run(testCtx(t), Config{BaseURL: srv.URL, AgentID: "echo", Concurrency: 1, Requests: 2, Duration: duration})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if rep.Requests != 2 || rep.Successes != 2 || rep.Stopped != "requests" {
		t.Errorf("requests %d (ok %d), stopped by %q; want 2 requests, stopped by \"requests\"", rep.Requests, rep.Successes, rep.Stopped)
	}
}
