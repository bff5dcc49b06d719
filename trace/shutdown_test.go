package trace_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/trace"
)

// TestStore_SpansEndingDuringShutdownAreAccounted: every span handed to
// the store is written, dropped or failed, also one that ends while the
// store shuts down (it was queued after the writer's last drain and
// counted nowhere).
func TestStore_SpansEndingDuringShutdownAreAccounted(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	for round := 0; round < 20; round++ {
		st, err := trace.NewStore(trace.StoreConfig{DB: d, FlushInterval: time.Hour, QueueSize: 1 << 16, BatchSize: 1 << 16})
		if err != nil {
			t.Fatal(err)
		}
		const workers, each = 4, 200
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; i < each; i++ {
					var tid oteltrace.TraceID
					var sid oteltrace.SpanID
					tid[0], tid[1], tid[2], sid[0], sid[1], sid[2] = byte(round), byte(w), byte(i), byte(round), byte(w), byte(i>>8)
					sid[3] = byte(i)
					stub := tracetest.SpanStub{Name: "invoke_agent x", StartTime: time.Now(), EndTime: time.Now(),
						SpanContext: oteltrace.NewSpanContext(oteltrace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: oteltrace.FlagsSampled})}
					st.OnEnd(stub.Snapshot())
				}
			}()
		}
		close(start)
		time.Sleep(time.Duration(round%5) * 100 * time.Microsecond)
		if err := st.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if got := st.Written() + st.Dropped() + st.Failed(); got != workers*each {
			t.Fatalf("round %d: written %d + dropped %d + failed %d = %d spans, want %d", round, st.Written(), st.Dropped(), st.Failed(), got, workers*each)
		}
	}
}
