package codemode_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentryhq/agentry/codemode"
)

// TestRun_CellIsASpanUnderTheCaller: each cell run inside a traced run is
// an execute_code span, child of the caller's span, carrying its session,
// execution count and status; a failing cell marks its span an error.
func TestRun_CellIsASpanUnderTheCaller(t *testing.T) {
	t.Parallel()
	cm, err := codemode.New(codemode.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer cm.Close()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, parent := tp.Tracer("test").Start(context.Background(), "execute_tool execute")
	if _, err := cm.Run(ctx, "s1", "", `1 + 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := cm.Run(ctx, "s1", "", `throw new Error("boom")`); err != nil {
		t.Fatal(err)
	}
	parent.End()
	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("spans %v", spans)
	}
	for i, s := range spans[:2] {
		got := map[string]string{}
		for _, kv := range s.Attributes {
			got[string(kv.Key)] = kv.Value.String()
		}
		if s.Name != "execute_code" || s.Parent.SpanID() != parent.SpanContext().SpanID() || got["agentry.codemode.session"] != "s1" ||
			got["agentry.codemode.execution_count"] != []string{"1", "2"}[i] || got["gen_ai.operation.name"] != "execute_code" {
			t.Errorf("cell span %d: %s %v", i, s.Name, got)
		}
	}
	if spans[0].Status.Code == codes.Error || spans[1].Status.Code != codes.Error {
		t.Errorf("statuses %v %v", spans[0].Status, spans[1].Status)
	}
}
