// Package otelspan opens Agentry's child spans in packages below the trace
// package (CodeMode cells, knowledge retrieval): a span is opened only when
// the context's span is recording, with that span's provider, so a caller
// that does not trace pays one interface check and no allocation.
package otelspan

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of Agentry's spans.
const ScopeName = "github.com/agentryhq/agentry"

// OperationKey is the GenAI semantic-convention operation attribute.
const OperationKey = attribute.Key("gen_ai.operation.name")

// Start opens an internal child span named name, with operation op, when
// ctx's span is recording; otherwise it returns ctx and nil. Set further
// attributes on a non-nil span only.
func Start(ctx context.Context, name, op string) (context.Context, oteltrace.Span) {
	parent := oteltrace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	return parent.TracerProvider().Tracer(ScopeName).Start(ctx, name, oteltrace.WithSpanKind(oteltrace.SpanKindInternal),
		oteltrace.WithAttributes(OperationKey.String(op)))
}

// End records err (when not nil) and ends span; a nil span is a no-op.
func End(span oteltrace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
