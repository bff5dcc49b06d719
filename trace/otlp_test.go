package trace_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/trace"
)

// TestFromEnv_StoreFlushesBeforeAStuckCollector: with the OTLP collector
// not answering, shutting the provider down within a deadline still
// writes the spans queued for the trace store. The provider shuts its
// processors down in order and gives up on the rest at the deadline, so a
// store shut down after the exporter lost its spans to the collector.
func TestFromEnv_StoreFlushesBeforeAStuckCollector(t *testing.T) {
	stuck := make(chan struct{})
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stuck:
		case <-r.Context().Done():
		}
	}))
	defer collector.Close()
	defer close(stuck)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_TRACES_EXPORTER", "")
	t.Setenv("OTEL_SDK_DISABLED", "")
	d := testdbs.SQLite(t)
	st, err := trace.NewStore(trace.StoreConfig{DB: d, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tp, shutdown, err := trace.FromEnv(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	_, span := tp.Tracer("test").Start(context.Background(), "invoke_agent Calculator")
	span.End()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = shutdown(ctx)
	if st.Written() != 1 {
		t.Fatalf("the store wrote %d spans, want 1 (dropped %d, failed %d)", st.Written(), st.Dropped(), st.Failed())
	}
}
