package trace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// ErrUnsupportedExporter: OTEL_TRACES_EXPORTER names an exporter Agentry
// does not ship (only otlp, over HTTP/protobuf, and none).
var ErrUnsupportedExporter = errors.New("trace: unsupported OTEL_TRACES_EXPORTER")

// Enabled reports whether the standard environment turns tracing on:
// OTEL_TRACES_EXPORTER=otlp, or an OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, unless OTEL_SDK_DISABLED=true or
// OTEL_TRACES_EXPORTER=none.
func Enabled(lookup func(string) (string, bool)) (bool, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	get := func(k string) string { v, _ := lookup(k); return strings.TrimSpace(v) }
	if strings.EqualFold(get("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	switch exp := strings.ToLower(get("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
	default:
		return false, fmt.Errorf("%w %q: use otlp (OTLP over HTTP; OTEL_EXPORTER_OTLP_* configure it) or none", ErrUnsupportedExporter, exp)
	}
	if p := strings.ToLower(get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")); p != "" && p != "http/protobuf" {
		return false, fmt.Errorf("%w: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL %q: Agentry exports OTLP over http/protobuf", ErrUnsupportedExporter, p)
	}
	if p := strings.ToLower(get("OTEL_EXPORTER_OTLP_PROTOCOL")); p != "" && p != "http/protobuf" {
		return false, fmt.Errorf("%w: OTEL_EXPORTER_OTLP_PROTOCOL %q: Agentry exports OTLP over http/protobuf", ErrUnsupportedExporter, p)
	}
	return get("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
}

// FromEnv builds the TracerProvider the standard OTEL_* environment asks
// for, batching spans to an OTLP/HTTP exporter (endpoint, headers, timeout
// and TLS from OTEL_EXPORTER_OTLP_*; service name from OTEL_SERVICE_NAME,
// default "agentry"), plus the given processors (a Store). With OTLP off
// and no processors it returns a nil provider and a no-op shutdown. Call
// shutdown to flush before exiting.
func FromEnv(ctx context.Context, procs ...sdktrace.SpanProcessor) (oteltrace.TracerProvider, func(context.Context) error, error) {
	noop := func(context.Context) error { return nil }
	on, err := Enabled(nil)
	if err != nil {
		return nil, noop, err
	}
	if !on && len(procs) == 0 {
		return nil, noop, nil
	}
	res := resource.Default()
	if _, ok := os.LookupEnv("OTEL_SERVICE_NAME"); !ok {
		if r, err := resource.Merge(res, resource.NewSchemaless(serviceName("agentry"))); err == nil {
			res = r
		}
	}
	// The given processors come first: the provider shuts its processors
	// down (and flushes them) in order and stops at the caller's deadline,
	// so a collector that does not answer must not cost the trace store
	// the spans it still holds.
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	for _, p := range procs {
		opts = append(opts, sdktrace.WithSpanProcessor(p))
	}
	if on {
		exp, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, noop, fmt.Errorf("trace: OTLP exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	return tp, tp.Shutdown, nil
}

// Propagator is the W3C trace-context propagator the server reads
// traceparent with.
func Propagator() propagation.TextMapPropagator { return propagation.TraceContext{} }
