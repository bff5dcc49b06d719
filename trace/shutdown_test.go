package trace_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
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

// recordOnly records every span without sampling it (a sampler that
// feeds span processors for local use, not for export).
type recordOnly struct{}

func (recordOnly) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if strings.HasPrefix(p.Name, "sampled ") {
		return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
	}
	return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly}
}
func (recordOnly) Description() string { return "recordOnly" }

// TestStore_KeepsOnlySampledSpans: a span its sampler recorded but did not
// sample is not exported, by the SDK's batcher nor by the store (Agno's
// span processors skip it too).
func TestStore_KeepsOnlySampledSpans(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	st, err := trace.NewStore(trace.StoreConfig{DB: d, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(recordOnly{}), sdktrace.WithSpanProcessor(st))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	_, span := tp.Tracer("test").Start(context.Background(), "invoke_agent Calculator")
	if !span.IsRecording() {
		t.Fatal("the span does not record")
	}
	span.End()
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st.Written() != 0 || st.Dropped() != 0 {
		t.Fatalf("written %d, dropped %d spans not sampled; want none", st.Written(), st.Dropped())
	}
	// A sampled span under one that is not is its trace's stored root:
	// its parent is not stored.
	ctx, outer := tp.Tracer("test").Start(context.Background(), "request")
	_, inner := tp.Tracer("test").Start(ctx, "sampled invoke_agent Calculator")
	inner.End()
	outer.End()
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, err := d.Spans(context.Background(), inner.SpanContext().TraceID().String())
	if err != nil || len(spans) != 1 || spans[0].ParentSpanID != "" {
		t.Fatalf("spans %+v, %v: want the sampled span alone, without a parent", spans, err)
	}
}

// TestStore_NonFiniteFloatKeepsTheOtherAttributes: a span attribute JSON
// cannot carry (NaN, ±Inf, alone or in a list) is stored as its text; it
// used to fail the encoding of the whole object and leave the span with no
// attributes at all (its input, its run's ids).
func TestStore_NonFiniteFloatKeepsTheOtherAttributes(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	st, err := trace.NewStore(trace.StoreConfig{DB: d, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(st))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	_, span := tp.Tracer("test").Start(context.Background(), "execute_tool score")
	span.SetAttributes(trace.AttrInputValue.String("the input"), attribute.Float64("score", math.NaN()),
		attribute.Float64Slice("scores", []float64{1, math.Inf(1)}), attribute.Float64("best", math.Inf(-1)))
	span.End()
	if err := tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, err := d.Spans(context.Background(), span.SpanContext().TraceID().String())
	if err != nil || len(spans) != 1 {
		t.Fatalf("spans %+v, %v", spans, err)
	}
	var a map[string]any
	if err := json.Unmarshal(spans[0].Attributes, &a); err != nil {
		t.Fatal(err)
	}
	if a["input.value"] != "the input" || a["score"] != "NaN" || a["best"] != "-Inf" || fmt.Sprint(a["scores"]) != "[1 +Inf]" {
		t.Fatalf("attributes %s", spans[0].Attributes)
	}
}
