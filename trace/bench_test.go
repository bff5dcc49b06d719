package trace_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/trace"
)

// benchRun measures one single-turn run of an agent without storage; tp nil
// is tracing off (the default), otherwise every span is sampled and
// recorded by the SDK (batched to no exporter).
func benchRun(b *testing.B, tp *sdktrace.TracerProvider, store *db.DB) {
	cfg := agent.Config{ID: "bench", Model: scripted.Reply("hello"), DB: store}
	var r agent.Runner
	if tp != nil {
		trace.Instrument(&cfg, tp)
	}
	a, err := agent.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	r = a
	if tp != nil {
		r = trace.Runner(a, tp)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Run(ctx, run.TextInput("hi")); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRun_TracingOff(b *testing.B) { benchRun(b, nil, nil) }

func BenchmarkRun_TracingOn(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	benchRun(b, tp, nil)
}

// The same run stored in a SQLite file, as `agentry serve` runs it.
func BenchmarkRunSQLite_TracingOff(b *testing.B) { benchRun(b, nil, testdbs.SQLite(b)) }

func BenchmarkRunSQLite_TracingOn(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	defer tp.Shutdown(context.Background())
	benchRun(b, tp, testdbs.SQLite(b))
}
