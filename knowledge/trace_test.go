package knowledge

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// TestSearch_IsARetrievalSpanUnderTheCaller: a search made inside a traced
// run is a retrieval span, child of the caller's span, with its mode,
// limit and hit count; an untraced search opens none.
func TestSearch_IsARetrievalSpanUnderTheCaller(t *testing.T) {
	t.Parallel()
	k := newKB(t, testdbs.SQLite(t), nil)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, parent := tp.Tracer("test").Start(context.Background(), "invoke_agent x")
	if _, err := k.Search(ctx, "anything", nil, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Search(context.Background(), "untraced", nil, 3); err != nil {
		t.Fatal(err)
	}
	parent.End()
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Name != "retrieval" || spans[0].Parent.SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("spans %v", spans)
	}
	got := map[string]string{}
	for _, kv := range spans[0].Attributes {
		got[string(kv.Key)] = kv.Value.String()
	}
	if got["gen_ai.operation.name"] != "retrieval" || got["agentry.retrieval.limit"] != "3" || got["agentry.retrieval.documents"] != "0" {
		t.Errorf("attributes %v", got)
	}
}
