package agentos

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/clip"
	"github.com/agentryhq/agentry/metrics"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/trace"
)

// Telemetry turns on the server's tracing and metrics for operators.
type Telemetry struct {
	// TracerProvider, when set, traces every request as a server span that
	// continues the caller's W3C traceparent; the agents' model and tool
	// spans (trace.Instrument) nest under it. Nil: no tracing middleware.
	TracerProvider oteltrace.TracerProvider
	// Metrics, when set, counts requests (by route pattern and status) and
	// is served at /prometheus; nil answers that route 404.
	Metrics *metrics.Metrics
}

// observe returns the middleware that traces requests, or nil when
// telemetry is off (the router then has no extra layer at all).
func (s *Server) observe() func(http.Handler) http.Handler {
	tp, m := s.cfg.Telemetry.TracerProvider, s.cfg.Telemetry.Metrics
	if tp == nil && m == nil {
		return nil
	}
	var tr oteltrace.Tracer
	if tp != nil {
		tr = tp.Tracer(trace.ScopeName)
	}
	prop := propagation.TraceContext{}
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ctx := r.Context()
			var span oteltrace.Span
			spanName := r.Method
			if tr != nil {
				ctx = prop.Extract(ctx, propagation.HeaderCarrier(r.Header))
				// The server takes any token as a method: as OpenTelemetry
				// names them, one it does not know is "_OTHER" (its span
				// "HTTP"), the client's word kept apart, so a client cannot
				// make span names.
				method := metrics.Method(r.Method)
				attrs := []attribute.KeyValue{attribute.String("http.request.method", method), attribute.String("url.path", r.URL.Path)}
				if method != r.Method {
					spanName = "HTTP"
					attrs = append(attrs, attribute.String("http.request.method_original", clip.Mark(r.Method, 64, "…")))
				}
				ctx, span = tr.Start(ctx, spanName, oteltrace.WithSpanKind(oteltrace.SpanKindServer), oteltrace.WithAttributes(attrs...))
				defer span.End()
				r = r.WithContext(ctx)
			}
			next.ServeHTTP(w, r)
			status := http.StatusOK
			if rec, ok := w.(*recorder); ok && rec.status != 0 {
				status = rec.status
			}
			route := ""
			if rctx := chi.RouteContext(r.Context()); rctx != nil {
				route = rctx.RoutePattern()
			}
			if m != nil {
				m.ObserveHTTP(r.Method, route, status, time.Since(start))
			}
			if span == nil {
				return
			}
			if route != "" {
				span.SetName(spanName + " " + route)
				span.SetAttributes(attribute.String("http.route", route))
			}
			span.SetAttributes(attribute.Int("http.response.status_code", status))
			if status >= 500 {
				span.SetStatus(codes.Error, strconv.Itoa(status))
			}
		})
	}
}

// getPrometheus serves the Prometheus text exposition. It is not at
// /metrics: that is AgentOS's JSON daily metrics (GET /metrics), which
// Agno clients read.
func (s *Server) getPrometheus(w http.ResponseWriter, r *http.Request) error {
	m := s.cfg.Telemetry.Metrics
	if m == nil {
		return errorf(http.StatusNotFound, "Prometheus metrics are off: start the server with agentry serve --prometheus")
	}
	m.Handler().ServeHTTP(w, r)
	return nil
}

// observed wraps a run the server is about to execute so that it is a run
// span (under the request's span: model, tool, CodeMode and retrieval spans
// nest under it) and is counted by final status in agentry_runs_total. It
// is used only to call Run or Stream; with telemetry off it returns t
// itself, so a run costs nothing more.
func (s *Server) observed(t runTarget, runID, sessionID, userID string) runTarget {
	tp, m := s.cfg.Telemetry.TracerProvider, s.cfg.Telemetry.Metrics
	if tp == nil && m == nil {
		return t
	}
	// Traced inside, metered outside: the duration counted includes the
	// span's bookkeeping, as the client sees it.
	return m.Runner(trace.KnownRunner(t, tp, trace.RunInfo{RunID: runID, SessionID: sessionID, UserID: userID}))
}

// observeQueueWait records how long a background run waited to start.
func (s *Server) observeQueueWait(queue string, since time.Time) {
	if m := s.cfg.Telemetry.Metrics; m != nil && !since.IsZero() {
		m.ObserveQueueWait(queue, time.Since(since))
	}
}

// registerQueueMetrics adds the queue gauges to the Prometheus registry:
// the in-process background runs, and the durable queue's depth and oldest
// wait when it is on.
func (s *Server) registerQueueMetrics() error {
	m := s.cfg.Telemetry.Metrics
	if m == nil {
		return nil
	}
	if err := m.SetBackgroundQueued(s.runs.backgroundQueued); err != nil {
		return fmt.Errorf("agentos: Prometheus metrics: %w (one metrics.Metrics per server)", err)
	}
	if s.queue == nil {
		return nil
	}
	q := s.queue
	return m.SetQueueStats(func() (int, time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		st, err := q.Stats(ctx, "", false)
		if err != nil {
			s.log.Warn("Prometheus scrape: durable queue stats", "err", err)
			return 0, 0
		}
		return st.Queued, time.Duration(st.OldestQueuedAgeSeconds) * time.Second
	})
}

// callTarget runs a call that is not Run or Stream (a continued run) as if
// it were, so that observed can wrap it.
type callTarget struct {
	runTarget
	run    func(context.Context) (*run.Output, error)
	stream func(context.Context) iter.Seq2[run.Event, error]
}

func (c callTarget) Run(ctx context.Context, _ run.Input, _ ...agent.RunOption) (*run.Output, error) {
	return c.run(ctx)
}

func (c callTarget) Stream(ctx context.Context, _ run.Input, _ ...agent.RunOption) iter.Seq2[run.Event, error] {
	return c.stream(ctx)
}

func (s *Server) telemetryOff() bool {
	return s.cfg.Telemetry.TracerProvider == nil && s.cfg.Telemetry.Metrics == nil
}

// observedCall is observed for a continued run executed synchronously.
func (s *Server) observedCall(ctx context.Context, t runTarget, row *db.Run, call func(context.Context) (*run.Output, error)) (*run.Output, error) {
	if s.telemetryOff() {
		return call(ctx)
	}
	return s.observed(callTarget{runTarget: t, run: call}, row.RunID, row.SessionID, row.UserID).Run(ctx, run.Input{})
}

// observedStream is observed for a continued run's event stream.
func (s *Server) observedStream(ctx context.Context, t runTarget, row *db.Run, stream func(context.Context) iter.Seq2[run.Event, error]) iter.Seq2[run.Event, error] {
	if s.telemetryOff() {
		return stream(ctx)
	}
	return s.observed(callTarget{runTarget: t, stream: stream}, row.RunID, row.SessionID, row.UserID).Stream(ctx, run.Input{})
}
