package loadgen

import (
	"testing"
)

// BenchmarkRun measures the generator's own cost per request against an
// in-process fake server (which shares the CPU), i.e. how much of a 2-core
// budget the client side takes.
func BenchmarkRun(b *testing.B) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "sse"}[stream]
		b.Run(name, func(b *testing.B) {
			f := &fakeOS{}
			url := newFakeOS(b, f)
			b.ReportAllocs()
			b.ResetTimer()
			rep, err := Run(b.Context(), Config{BaseURL: url, AgentID: "echo", Concurrency: 8, Requests: b.N, Stream: stream})
			if err != nil || rep.Successes != b.N {
				b.Fatalf("Run: %v, %d of %d ok (%v)", err, rep.Successes, b.N, rep.Errors)
			}
			b.ReportMetric(rep.RunsPerSecond, "runs/s")
		})
	}
}
