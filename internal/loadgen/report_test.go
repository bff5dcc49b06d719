package loadgen

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestPercentilesOf_NearestRank(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	seq := func(n int) []time.Duration {
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration(n-i) * ms // reversed: percentilesOf sorts
		}
		return s
	}
	tests := []struct {
		name    string
		samples []time.Duration
		want    Percentiles
	}{
		{"none", nil, Percentiles{}},
		{"one", []time.Duration{7 * ms}, Percentiles{Count: 1, Mean: 7 * ms, P50: 7 * ms, P90: 7 * ms, P99: 7 * ms, Max: 7 * ms}},
		{"1..100", seq(100), Percentiles{Count: 100, Mean: 50500 * time.Microsecond, P50: 50 * ms, P90: 90 * ms, P99: 99 * ms, Max: 100 * ms}},
		{"1..10", seq(10), Percentiles{Count: 10, Mean: 5500 * time.Microsecond, P50: 5 * ms, P90: 9 * ms, P99: 10 * ms, Max: 10 * ms}},
		{"one slow outlier in 1000", append(make([]time.Duration, 999), time.Second), Percentiles{Count: 1000, Mean: ms, Max: time.Second}},
	}
	for _, tt := range tests {
		if got := percentilesOf(tt.samples); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func sampleReport() Report {
	fe := Percentiles{Count: 95, P50: 800 * time.Microsecond, P99: 1500 * time.Microsecond, Max: 2 * time.Millisecond}
	return Report{
		URL: "http://127.0.0.1:7777/agents/echo/runs", Stream: true, Concurrency: 32, SessionMode: SessionNew,
		Elapsed: 2 * time.Second, Requests: 100, Successes: 95,
		Failures:      Failures{Status: map[int]int{500: 3, 429: 1}, Transport: 1},
		RunsPerSecond: 47.5,
		Latency:       Percentiles{Count: 95, P50: 4 * time.Millisecond, P90: 9 * time.Millisecond, P99: 20 * time.Millisecond, Max: 31 * time.Millisecond},
		FirstEvent:    &fe, Stopped: "requests", Errors: []string{"HTTP 500: boom"},
	}
}

func TestReport_StringShowsTheTable(t *testing.T) {
	t.Parallel()
	s := sampleReport().String()
	for _, want := range []string{
		"http://127.0.0.1:7777/agents/echo/runs (sse, 32 clients",
		"stopped: requests",
		"failed 5",
		"status 429: 1, status 500: 3, transport: 1",
		"runs/s       47.5",
		"20.000ms", // latency p99
		"first event",
		"0.800ms",
		"error: HTTP 500: boom",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("String() lacks %q:\n%s", want, s)
		}
	}
}

func TestReport_JSONUsesMillisecondsAndSnakeCase(t *testing.T) {
	t.Parallel()
	data, err := json.Marshal(sampleReport())
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		RunsPerSecond float64 `json:"runs_per_second"`
		ElapsedS      float64 `json:"elapsed_s"`
		Latency       struct {
			P99MS float64 `json:"p99_ms"`
		} `json:"latency"`
		FirstEvent *struct {
			P50MS float64 `json:"p50_ms"`
		} `json:"first_event"`
		Failures struct {
			Total  int            `json:"total"`
			Status map[string]int `json:"status"`
		} `json:"failures"`
		Stopped string `json:"stopped"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatalf("%v in %s", err, data)
	}
	if got.RunsPerSecond != 47.5 || got.ElapsedS != 2 || got.Latency.P99MS != 20 || got.FirstEvent == nil ||
		got.FirstEvent.P50MS != 0.8 || got.Failures.Total != 5 || got.Failures.Status["500"] != 3 || got.Stopped != "requests" {
		t.Errorf("JSON = %s", data)
	}
	r := sampleReport()
	r.Stream, r.FirstEvent = false, nil
	data, _ = json.Marshal(r)
	if strings.Contains(string(data), "first_event") {
		t.Errorf("non-stream report has first_event: %s", data)
	}
}
