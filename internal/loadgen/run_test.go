package loadgen

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// testCtx bounds a test's Run so a generator that failed to stop fails the
// test (as "canceled") instead of hanging it.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestRun_CountsCompletedRuns(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "sse"}[stream]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := &fakeOS{delay: 2 * time.Millisecond}
			url := newFakeOS(t, f)
			rep, err := Run(testCtx(t), Config{BaseURL: url, AgentID: "echo", Concurrency: 4, Requests: 40, Stream: stream})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			calls, _, bad := f.snapshot()
			if rep.Requests != 40 || rep.Successes != 40 || rep.Failures.Total() != 0 || calls != 40 {
				t.Fatalf("requests %d successes %d failures %s server calls %d; want 40/40/none/40 (errors %v)",
					rep.Requests, rep.Successes, rep.Failures, calls, rep.Errors)
			}
			if len(bad) > 0 {
				t.Errorf("client broke the wire format: %v", bad)
			}
			if rep.Stopped != "requests" || rep.RunsPerSecond <= 0 || rep.Latency.Count != 40 {
				t.Errorf("stopped %q, runs/s %v, latency count %d", rep.Stopped, rep.RunsPerSecond, rep.Latency.Count)
			}
			// Every run waited for the server's delay, so no latency is below it.
			if lo := percentileFloor(rep.Latency); lo < f.delay {
				t.Errorf("latency p50 %v below the server's delay %v", lo, f.delay)
			}
			if !stream {
				if rep.FirstEvent != nil {
					t.Errorf("json run reports a first-event time: %+v", rep.FirstEvent)
				}
				return
			}
			if rep.FirstEvent == nil || rep.FirstEvent.Count != 40 {
				t.Fatalf("first event = %+v, want 40 samples", rep.FirstEvent)
			}
			// RunStarted comes before RunCompleted on every stream, so each
			// first-event percentile is at most the matching latency percentile.
			fe, lat := rep.FirstEvent, rep.Latency
			if fe.P50 > lat.P50 || fe.P99 > lat.P99 || fe.Max > lat.Max {
				t.Errorf("first event %+v later than completion %+v", *fe, lat)
			}
		})
	}
}

func percentileFloor(p Percentiles) time.Duration { return min(p.P50, p.P90, p.P99, p.Max) }

func TestRun_CategorisesFailures(t *testing.T) {
	t.Parallel()
	every := func(k int, o outcome) func(int) outcome {
		return func(n int) outcome {
			if n%k == 0 {
				return o
			}
			return ok
		}
	}
	tests := []struct {
		name      string
		stream    bool
		decide    func(int) outcome
		want      Failures
		successes int
		errSubstr string
	}{
		{"500 every third request", false, every(3, status500), Failures{Status: map[int]int{500: 10}}, 20, "HTTP 500"},
		{"body that is not JSON", false, every(2, badJSON), Failures{BadBody: 15}, 15, "bad body"},
		{"run JSON with status ERROR", false, every(5, runStatusError), Failures{RunError: 6}, 24, "model exploded"},
		{"connection closed without response", false, every(10, hangUp), Failures{Transport: 3}, 27, "transport"},
		{"RunError event on the stream", true, every(3, streamRunError), Failures{RunError: 10}, 20, "tool failed"},
		{"stream without RunCompleted", true, every(2, streamTruncate), Failures{BadBody: 15}, 15, "without RunCompleted"},
		{"stream not opening with RunStarted", true, every(6, streamNoStart), Failures{BadBody: 5}, 25, "want RunStarted"},
		{"JSON answer to a stream request", true, every(30, wrongType), Failures{BadBody: 1}, 29, "text/event-stream"},
		{"500 on a stream request", true, every(3, status500), Failures{Status: map[int]int{500: 10}}, 20, "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeOS{decide: tt.decide}
			url := newFakeOS(t, f)
			rep, err := Run(testCtx(t), Config{BaseURL: url, AgentID: "echo", Concurrency: 3, Requests: 30, Stream: tt.stream})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := rep.Failures
			if got.String() != tt.want.String() {
				t.Errorf("failures = %s, want %s (errors %v)", got, tt.want, rep.Errors)
			}
			if rep.Successes != tt.successes || rep.Requests != 30 {
				t.Errorf("successes %d of %d, want %d of 30", rep.Successes, rep.Requests, tt.successes)
			}
			if !strings.Contains(strings.Join(rep.Errors, "\n"), tt.errSubstr) {
				t.Errorf("errors %q do not mention %q", rep.Errors, tt.errSubstr)
			}
		})
	}
}

func TestRun_StopsByItself(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		cfg         Config
		wantStopped string
		wantExact   int // 0: any positive count
	}{
		{"at the request count", Config{Requests: 25, Concurrency: 8}, "requests", 25},
		{"fewer requests than clients", Config{Requests: 3, Concurrency: 16}, "requests", 3},
		{"at the duration", Config{Duration: 150 * time.Millisecond, Concurrency: 4}, "duration", 0},
		{"at the duration when streaming", Config{Duration: 150 * time.Millisecond, Concurrency: 4, Stream: true}, "duration", 0},
		{"at whichever comes first", Config{Duration: 10 * time.Minute, Requests: 12, Concurrency: 2}, "requests", 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeOS{}
			tt.cfg.BaseURL, tt.cfg.AgentID = newFakeOS(t, f), "echo"
			rep, err := Run(testCtx(t), tt.cfg)
			if err != nil {
				t.Fatalf("Run: %v (stopped %q)", err, rep.Stopped)
			}
			if rep.Stopped != tt.wantStopped {
				t.Errorf("stopped by %q, want %q", rep.Stopped, tt.wantStopped)
			}
			calls, _, _ := f.snapshot()
			if tt.wantExact > 0 && (rep.Requests != tt.wantExact || calls != tt.wantExact) {
				t.Errorf("requests %d, server calls %d, want %d", rep.Requests, calls, tt.wantExact)
			}
			if rep.Requests == 0 || rep.Successes != rep.Requests {
				t.Errorf("requests %d successes %d (errors %v)", rep.Requests, rep.Successes, rep.Errors)
			}
		})
	}
}

func TestRun_CancellationStopsAndDropsCutOffRequests(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	f := &fakeOS{decide: func(int) outcome { return block }, arrived: arrived}
	url := newFakeOS(t, f)
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() {
		<-arrived
		cancel()
	}()
	rep, err := Run(ctx, Config{BaseURL: url, AgentID: "echo", Concurrency: 4, Duration: MaxDuration})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v, want context.Canceled", err)
	}
	if rep.Stopped != "canceled" || rep.Requests != 0 || rep.Failures.Total() != 0 {
		t.Errorf("stopped %q, requests %d, failures %s; want canceled with nothing counted", rep.Stopped, rep.Requests, rep.Failures)
	}
}

func TestRun_CancellationDuringWarmup(t *testing.T) {
	t.Parallel()
	arrived := make(chan struct{}, 1)
	f := &fakeOS{arrived: arrived}
	url := newFakeOS(t, f)
	ctx, cancel := context.WithCancel(testCtx(t))
	go func() {
		<-arrived
		cancel()
	}()
	rep, err := Run(ctx, Config{BaseURL: url, AgentID: "echo", Warmup: MaxDuration, Requests: 10})
	if !errors.Is(err, context.Canceled) || rep.Stopped != "canceled" || rep.Requests != 0 {
		t.Fatalf("err %v, stopped %q, requests %d; want canceled before measuring", err, rep.Stopped, rep.Requests)
	}
}

func TestRun_WarmupIsNotReported(t *testing.T) {
	t.Parallel()
	// The very first request fails; it belongs to the warmup, so the report
	// only sees the measured successes.
	f := &fakeOS{decide: func(n int) outcome {
		if n == 1 {
			return status500
		}
		return ok
	}}
	url := newFakeOS(t, f)
	rep, err := Run(testCtx(t), Config{BaseURL: url, AgentID: "echo", Concurrency: 1, Warmup: 300 * time.Millisecond, Requests: 5})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	calls, _, _ := f.snapshot()
	if rep.Requests != 5 || rep.Successes != 5 || calls <= 5 {
		t.Errorf("report %d requests (%d ok, failures %s), server calls %d; want 5 measured after warmup calls",
			rep.Requests, rep.Successes, rep.Failures, calls)
	}
}

func TestRun_SessionModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		mode      SessionMode
		stream    bool
		perWorker bool
	}{
		{"new session every run", SessionNew, false, false},
		{"one session per worker from the run JSON", SessionPerWorker, false, true},
		{"one session per worker from RunStarted", SessionPerWorker, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeOS{}
			url := newFakeOS(t, f)
			rep, err := Run(testCtx(t), Config{BaseURL: url, AgentID: "echo", Concurrency: 3, Requests: 12, SessionMode: tt.mode, Stream: tt.stream})
			if err != nil || rep.Successes != 12 {
				t.Fatalf("Run: %v, successes %d (errors %v)", err, rep.Successes, rep.Errors)
			}
			_, sessions, _ := f.snapshot()
			distinct := len(sessions)
			if sessions[""] > 0 {
				distinct--
			}
			if !tt.perWorker {
				if sessions[""] != 12 || distinct != 0 {
					t.Errorf("sessions sent %v: want 12 requests without a session id", sessions)
				}
				return
			}
			// Workers share the 12 tickets, so how many of the 3 workers get
			// one, and how many get more than one, depends on scheduling; what
			// does not: each worker that sends starts exactly one new session
			// (it waits for the first answer) and sends every later request in
			// it. A worker whose only ticket was its first sends no session id
			// at all, so there are at most as many ids as new sessions, and at
			// least one (12 tickets for 3 workers: some worker sends twice).
			if n := sessions[""]; n < 1 || n > 3 || distinct < 1 || distinct > n {
				t.Errorf("sessions sent %v: %d new and %d distinct ids, want one new session per sending worker (1..3) and no more ids than new sessions", sessions, n, distinct)
			}
			total := 0
			for _, n := range sessions {
				total += n
			}
			if total != 12 {
				t.Errorf("sessions sent %v: %d requests, want 12", sessions, total)
			}
		})
	}
}

func TestRun_SendsBearerToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		token string
		want  Failures
	}{
		{"with the token", "s3cret", Failures{}},
		{"without a token", "", Failures{Status: map[int]int{401: 6}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := newFakeOS(t, &fakeOS{token: "s3cret"})
			rep, err := Run(testCtx(t), Config{BaseURL: url, AgentID: "echo", Concurrency: 2, Requests: 6, BearerToken: tt.token})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if rep.Failures.String() != tt.want.String() {
				t.Errorf("failures %s, want %s", rep.Failures, tt.want)
			}
		})
	}
}

func TestRun_UnknownAgentIsAStatusFailure(t *testing.T) {
	t.Parallel()
	url := newFakeOS(t, &fakeOS{})
	rep, err := Run(testCtx(t), Config{BaseURL: url + "/", AgentID: "nobody", Concurrency: 1, Requests: 2})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if rep.Failures.Status[404] != 2 || !strings.HasSuffix(rep.URL, "/agents/nobody/runs") {
		t.Errorf("failures %s for %s, want 2× status 404 on /agents/nobody/runs", rep.Failures, rep.URL)
	}
}
