package agentos

import (
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/agentryhq/agentry/trace"
)

// Telemetry turns on the server's tracing and metrics for operators.
type Telemetry struct {
	// TracerProvider, when set, traces every request as a server span that
	// continues the caller's W3C traceparent; the agents' model and tool
	// spans (trace.Instrument) nest under it. Nil: no tracing middleware.
	TracerProvider oteltrace.TracerProvider
}

// observe returns the middleware that traces requests, or nil when
// telemetry is off (the router then has no extra layer at all).
func (s *Server) observe() func(http.Handler) http.Handler {
	tp := s.cfg.Telemetry.TracerProvider
	if tp == nil {
		return nil
	}
	tr := tp.Tracer(trace.ScopeName)
	prop := propagation.TraceContext{}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			ctx, span := tr.Start(ctx, r.Method, oteltrace.WithSpanKind(oteltrace.SpanKindServer), oteltrace.WithAttributes(
				attribute.String("http.request.method", r.Method), attribute.String("url.path", r.URL.Path)))
			defer span.End()
			r = r.WithContext(ctx)
			next.ServeHTTP(w, r)
			status := http.StatusOK
			if rec, ok := w.(*recorder); ok && rec.status != 0 {
				status = rec.status
			}
			if rctx := chi.RouteContext(ctx); rctx != nil && rctx.RoutePattern() != "" {
				span.SetName(r.Method + " " + rctx.RoutePattern())
				span.SetAttributes(attribute.String("http.route", rctx.RoutePattern()))
			}
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if status >= 500 {
				span.SetStatus(codes.Error, strconv.Itoa(status))
			}
		})
	}
}
