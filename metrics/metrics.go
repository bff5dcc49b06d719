package metrics

import (
	"context"
	"iter"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/trace"
)

// Metrics holds the collectors on a registry of its own.
type Metrics struct {
	reg          *prometheus.Registry
	runs         *prometheus.CounterVec
	runDuration  *prometheus.HistogramVec
	modelCalls   *prometheus.HistogramVec
	tokens       *prometheus.CounterVec
	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	queueWait    *prometheus.HistogramVec
}

// QueueStats is the hook the durable queue sets (SetQueueStats): how many
// jobs wait and how long the oldest has waited.
type QueueStats func() (depth int, oldestWait time.Duration)

// New registers the collectors (and the Go and process collectors).
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentry_runs_total",
		Help: "Finished runs by component and final status."}, []string{"component_type", "component_id", "status"})
	m.runDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentry_run_duration_seconds",
		Help: "Run latency by component.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)}, []string{"component_type", "component_id"})
	m.modelCalls = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentry_model_call_duration_seconds",
		Help: "Model call latency by provider, model and outcome.", Buckets: prometheus.ExponentialBuckets(0.01, 2, 14)},
		[]string{"provider", "model", "outcome"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentry_model_tokens_total",
		Help: "Tokens by provider, model and direction (input, output)."}, []string{"provider", "model", "direction"})
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "agentry_http_requests_total",
		Help: "HTTP requests by method, route pattern and status."}, []string{"method", "route", "status"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentry_http_request_duration_seconds",
		Help: "HTTP request latency by method and route pattern.", Buckets: prometheus.DefBuckets}, []string{"method", "route"})
	m.queueWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "agentry_queue_wait_seconds",
		Help:    "How long a background run waited before it started, by queue (background: in process; durable).",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 12)}, []string{"queue"})
	m.reg.MustRegister(m.runs, m.runDuration, m.modelCalls, m.tokens, m.httpRequests, m.httpDuration, m.queueWait,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry is where the collectors live (for tests and extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the text exposition.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// SetQueueStats registers agentry_queue_depth and
// agentry_queue_oldest_wait_seconds, read from stats once at each scrape
// (both from one reading: on the durable queue it is a database query).
// The server calls it once when its durable queue is on; until then neither
// series exists. Registering them twice is an error.
func (m *Metrics) SetQueueStats(stats QueueStats) error {
	return m.reg.Register(queueCollector{stats: stats,
		depth: prometheus.NewDesc("agentry_queue_depth", "Jobs waiting in the durable queue.", nil, nil),
		wait:  prometheus.NewDesc("agentry_queue_oldest_wait_seconds", "How long the oldest waiting job has waited.", nil, nil),
	})
}

// queueCollector exports one QueueStats reading as two gauges.
type queueCollector struct {
	stats       QueueStats
	depth, wait *prometheus.Desc
}

func (c queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.depth; ch <- c.wait }

func (c queueCollector) Collect(ch chan<- prometheus.Metric) {
	depth, wait := c.stats()
	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(depth))
	ch <- prometheus.MustNewConstMetric(c.wait, prometheus.GaugeValue, wait.Seconds())
}

// ObserveQueueWait records how long a background run waited for a worker;
// queue is "background" (the server's in-process queue) or "durable".
func (m *Metrics) ObserveQueueWait(queue string, d time.Duration) {
	m.queueWait.WithLabelValues(label(queue)).Observe(max(d, 0).Seconds())
}

// SetBackgroundQueued registers agentry_background_runs_queued, the runs
// the server accepted in the background that wait for or hold a worker,
// read from queued at each scrape. Registering it twice is an error.
func (m *Metrics) SetBackgroundQueued(queued func() int) error {
	return m.reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "agentry_background_runs_queued",
		Help: "Background runs accepted by the server that have not finished (in-process queue)."},
		func() float64 { return float64(queued()) }))
}

// SetTraceStore registers the trace store's span counters: written,
// dropped (queue full: runs are never made to wait) and failed (a database
// write lost them).
func (m *Metrics) SetTraceStore(written, dropped, failed func() uint64) error {
	for name, f := range map[string]func() uint64{"written": written, "dropped": dropped, "failed": failed} {
		if err := m.reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "agentry_trace_spans_" + name + "_total",
			Help: "Spans the trace store (tracing.store) " + name + "."}, func() float64 { return float64(f()) })); err != nil {
			return err
		}
	}
	return nil
}

// ObserveHTTP counts one request; route is the matched pattern ("" for
// none: it is recorded as "unmatched", so paths never become labels), and a
// method other than RFC 9110's eight and PATCH is recorded as _OTHER
// (the server takes any token as a method: a client must not be able to
// make series).
func (m *Metrics) ObserveHTTP(method, route string, status int, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	route, method = label(route), Method(method)
	m.httpRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(method, route).Observe(d.Seconds())
}

// Method is method as a label or span attribute: one of RFC 9110's eight
// and PATCH as it is, any other "_OTHER" (OpenTelemetry's name for it).
func Method(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "_OTHER"
}

// ObserveRun counts a finished run.
func (m *Metrics) ObserveRun(c run.Component, status run.Status, d time.Duration) {
	typ, id := label(string(c.Type)), label(c.ID)
	m.runs.WithLabelValues(typ, id, label(string(status))).Inc()
	m.runDuration.WithLabelValues(typ, id).Observe(d.Seconds())
}

// label is a label value the Prometheus client takes: it panics on one that
// is not UTF-8 (an id a Go caller gave), so bad bytes become U+FFFD.
func label(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

// Instrument wraps an agent configuration's models (before agent.New) so
// their calls are timed and their tokens counted, fallbacks included (in
// new lists: the caller's are left as they are). A nil m changes nothing.
func (m *Metrics) Instrument(cfg *agent.Config) {
	if m == nil {
		return
	}
	// New lists, not the caller's: a list two configurations share would
	// have its models wrapped twice, and each call counted twice.
	cfg.WrapModels(func(next model.Model) model.Model { return meteredModel{next: next, m: m} })
}

// Runner wraps a component so its runs are counted by final status and
// timed. A run that does not start (nil output, or an error as its stream's
// only item: an option it cannot honour, its id running already, its
// session unreadable) is not a run and is not counted; the request's HTTP
// series count it. A nil m returns r.
func (m *Metrics) Runner(r agent.Runner) agent.Runner {
	if m == nil {
		return r
	}
	return meteredRunner{Runner: r, m: m}
}

type meteredRunner struct {
	agent.Runner
	m *Metrics
}

func (r meteredRunner) Run(ctx context.Context, input run.Input, opts ...agent.RunOption) (*run.Output, error) {
	start := time.Now()
	out, err := r.Runner.Run(ctx, input, opts...)
	if out == nil && err != nil {
		return out, err // not started
	}
	status := run.StatusError
	if out != nil && out.Status != "" {
		status = out.Status
	}
	r.m.ObserveRun(r.Runner.Component(), status, time.Since(start))
	return out, err
}

func (r meteredRunner) Stream(ctx context.Context, input run.Input, opts ...agent.RunOption) iter.Seq2[run.Event, error] {
	return func(yield func(run.Event, error) bool) {
		start := time.Now()
		status := run.StatusRunning
		started := false
		defer func() {
			if started {
				r.m.ObserveRun(r.Runner.Component(), status, time.Since(start))
			}
		}()
		var end trace.OwnEnd
		for ev, err := range r.Runner.Stream(ctx, input, opts...) {
			if err != nil && !started {
				yield(ev, err) // not started: the error is the only item
				return
			}
			started = true
			if err != nil {
				status = run.StatusError
			} else if s, ok := end.Observe(ev); ok {
				status = s
			}
			if !yield(ev, err) {
				if status == run.StatusRunning {
					// Its consumer stopped reading before the run ended
					// (a client gone): the run stops, stored CANCELLED.
					status = run.StatusCancelled
				}
				return
			}
		}
	}
}

type meteredModel struct {
	next model.Model
	m    *Metrics
}

func (mm meteredModel) Info() model.Info { return mm.next.Info() }

func (mm meteredModel) done(start time.Time, usage *model.Usage, err error) {
	info := mm.next.Info()
	info.Provider, info.ID = label(info.Provider), label(info.ID)
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	mm.m.modelCalls.WithLabelValues(info.Provider, info.ID, outcome).Observe(time.Since(start).Seconds())
	if usage != nil {
		mm.m.tokens.WithLabelValues(info.Provider, info.ID, "input").Add(float64(usage.InputTokens))
		mm.m.tokens.WithLabelValues(info.Provider, info.ID, "output").Add(float64(usage.OutputTokens))
	}
}

func (mm meteredModel) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	start := time.Now()
	resp, err := mm.next.Invoke(ctx, req)
	var usage *model.Usage
	if resp != nil {
		usage = &resp.Usage
	}
	mm.done(start, usage, err)
	return resp, err
}

func (mm meteredModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		start := time.Now()
		var usage *model.Usage
		var failed error
		defer func() { mm.done(start, usage, failed) }()
		for c, err := range mm.next.Stream(ctx, req) {
			if err != nil {
				failed = err
			} else if c != nil && c.Usage != nil {
				u := *c.Usage
				usage = &u
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

// ReadsHistory answers for the wrapped model (model.HistoryReader).
func (mm meteredModel) ReadsHistory() bool { return model.ReadsHistory(mm.next) }

// AcceptsURL answers for the wrapped model (model.URLAccepter).
func (mm meteredModel) AcceptsURL(t model.PartType, mimeType string) bool {
	return model.AcceptsURL(mm.next, t, mimeType)
}
