package agentos

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/internal/loadgen"
)

// BenchmarkStreamFirstEvent is issue 4's SSE measurement in one process:
// b.N streamed runs of a scripted agent on SQLite from 32 clients (and from
// one), through internal/loadgen, reporting the time to the first event
// (RunStarted) and its ratio to the whole run's latency. The ratio survives
// machine load better than the times do: it was ~0.06–0.1 before SQLite's
// group commit woke finished runs in groups (commit 7cf23c6) and ~0.3 after
// (docs/benchmarks.md, "Issue 4: SSE first event (i4-sse)"); a rise of it is
// the regression to look for. Not a timed test: nothing here fails on time.
func BenchmarkStreamFirstEvent(b *testing.B) {
	for _, bc := range []struct {
		name    string
		clients int
	}{{"sqlite/32clients", 32}, {"sqlite/1client", 1}} {
		b.Run(bc.name, func(b *testing.B) {
			u := benchServer(b, true)
			base := u[:len(u)-len("/agents/bench/runs")]
			// Warm the connections and the database outside the timer.
			if _, err := loadgen.Run(context.Background(), loadgen.Config{BaseURL: base, AgentID: "bench",
				Concurrency: bc.clients, Requests: 4 * bc.clients, Stream: true}); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			rep, err := loadgen.Run(context.Background(), loadgen.Config{BaseURL: base, AgentID: "bench",
				Concurrency: bc.clients, Requests: max(b.N, bc.clients), Stream: true})
			b.StopTimer()
			if err != nil {
				b.Fatal(err)
			}
			if n := rep.Failures.Total(); n > 0 {
				b.Fatalf("%d of %d requests failed: %v", n, rep.Requests, rep.Errors)
			}
			if rep.FirstEvent == nil {
				b.Fatal("the report has no first-event percentiles")
			}
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(rep.FirstEvent.P50), "first-p50-ms")
			b.ReportMetric(ms(rep.FirstEvent.P99), "first-p99-ms")
			b.ReportMetric(ms(rep.Latency.P50), "run-p50-ms")
			if rep.Latency.P50 > 0 {
				b.ReportMetric(float64(rep.FirstEvent.P50)/float64(rep.Latency.P50), "first/run-p50")
			}
			b.ReportMetric(rep.RunsPerSecond, "runs/s")
		})
	}
}
