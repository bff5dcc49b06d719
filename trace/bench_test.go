package trace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/trace"
)

// cpuTime is the process's user+system CPU time: on a loaded machine it
// measures the work a run costs (including background goroutines such as
// the trace store's writer) where wall time measures the scheduler.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchRun measures one single-turn run of an agent as the server runs it
// (a run span via KnownRunner when tracing is on); tp nil is tracing off
// (the default). It reports cpu-ns/op next to ns/op.
func benchRun(b *testing.B, tp *sdktrace.TracerProvider, store *db.DB) {
	benchRunWith(b, provider(tp), tp, store)
}

// benchRunWith is benchRun with the provider the agent sees (p, which may
// carry a content policy) apart from the SDK's (tp, flushed at the end).
func benchRunWith(b *testing.B, p oteltrace.TracerProvider, tp *sdktrace.TracerProvider, store *db.DB) {
	cfg := agent.Config{ID: "bench", Model: scripted.Reply("hello"), DB: store}
	trace.Instrument(&cfg, p)
	a, err := agent.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	r := trace.KnownRunner(a, p, trace.RunInfo{RunID: "r", SessionID: "s", UserID: "u"})
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := r.Run(ctx, run.TextInput("hi")); err != nil {
			b.Fatal(err)
		}
	}
	if tp != nil {
		_ = tp.ForceFlush(ctx) // the store's writes are part of the cost
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

// provider keeps a nil *TracerProvider a nil interface (tracing off).
func provider(tp *sdktrace.TracerProvider) oteltrace.TracerProvider {
	if tp == nil {
		return nil
	}
	return tp
}

// NoTracing is the bare agent, never passed through the trace package:
// the baseline TracingOff must match in allocations.
func BenchmarkRun_NoTracing(b *testing.B) {
	a, err := agent.New(agent.Config{ID: "bench", Model: scripted.Reply("hello")})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for b.Loop() {
		if _, err := a.Run(ctx, run.TextInput("hi")); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}

func BenchmarkRun_TracingOff(b *testing.B) { benchRun(b, nil, nil) }

func BenchmarkRun_TracingOn(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	benchRun(b, tp, nil)
}

// NoContent: spans without the run's text (tracing.capture_content: false).
func BenchmarkRun_TracingOnNoContent(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	benchRunWith(b, trace.WithContent(tp, trace.Content{Omit: true}), tp, nil)
}

// The same run stored in a SQLite file, as `agentry serve` runs it.
func BenchmarkRunSQLite_TracingOff(b *testing.B) { benchRun(b, nil, testdbs.SQLite(b)) }

func BenchmarkRunSQLite_TracingOn(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	benchRun(b, tp, testdbs.SQLite(b))
}

func BenchmarkRunSQLite_TracingOnNoContent(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	benchRunWith(b, trace.WithContent(tp, trace.Content{Omit: true}), tp, testdbs.SQLite(b))
}

// TracingStore: the spans are also written to agno_traces/agno_spans in the
// same SQLite file (tracing.store: true).
func BenchmarkRunSQLite_TracingStore(b *testing.B) {
	d := testdbs.SQLite(b)
	st, err := trace.NewStore(trace.StoreConfig{DB: d})
	if err != nil {
		b.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(st))
	defer tp.Shutdown(context.Background())
	benchRun(b, tp, d)
	b.ReportMetric(float64(st.Dropped()), "dropped-spans")
}

// StoreWrite: one batch the span store writes (a trace and 32 spans, a run
// with a few model and tool calls) into each SQL driver.
func BenchmarkStoreWrite_SQLite(b *testing.B)   { benchStoreWrite(b, testdbs.SQLite(b)) }
func BenchmarkStoreWrite_Postgres(b *testing.B) { benchStoreWrite(b, testdbs.Postgres(b)) }

func benchStoreWrite(b *testing.B, d *db.DB) {
	ctx := context.Background()
	t0 := time.Now().UTC()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		tid := fmt.Sprintf("t%08d", i)
		tr := db.Trace{TraceID: tid, Name: "invoke_agent A", Status: "OK", StartTime: t0, EndTime: t0.Add(time.Second), DurationMS: 1000,
			RunID: "r" + tid, SessionID: "s", UserID: "u", AgentID: "a", CreatedAt: t0}
		spans := make([]db.Span, 32)
		for j := range spans {
			spans[j] = db.Span{SpanID: fmt.Sprintf("%s-%02d", tid, j), TraceID: tid, ParentSpanID: tid + "-00", Name: "chat m", SpanKind: "CLIENT",
				StatusCode: "OK", StartTime: t0, EndTime: t0.Add(time.Millisecond), DurationMS: 1,
				Attributes: json.RawMessage(`{"gen_ai.system":"openai","gen_ai.usage.input_tokens":12}`), CreatedAt: t0}
		}
		if err := d.WriteTraces(ctx, []db.Trace{tr}, spans); err != nil {
			b.Fatal(err)
		}
	}
}
