package metrics_test

import (
	"context"
	"fmt"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/metrics"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// The method is a label, and Go's server takes any token as a method: each
// one a client made up was a series of its own in two families (a client
// could grow the registry and every scrape without bound). The standard
// methods keep their names; any other is counted as _OTHER.
func TestObserveHTTP_MadeUpMethodsShareOneSeries(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	for i := range 100 {
		m.ObserveHTTP(fmt.Sprintf("X%d", i), "", 405, time.Millisecond)
	}
	m.ObserveHTTP("get", "", 405, time.Millisecond)
	for _, method := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"} {
		m.ObserveHTTP(method, "/x", 200, time.Millisecond)
	}
	fams := scrape(t, m)
	for _, name := range []string{"agentry_http_requests_total", "agentry_http_request_duration_seconds"} {
		if n := len(fams[name].GetMetric()); n != 10 {
			t.Errorf("%s has %d series; want 10 (nine methods and _OTHER)", name, n)
		}
	}
	if s, ok := value(fams, "agentry_http_requests_total", map[string]string{"method": "_OTHER", "status": "405"}); !ok || s.Counter.GetValue() != 101 {
		t.Errorf("made-up methods: %v", s)
	}
	if s, ok := value(fams, "agentry_http_requests_total", map[string]string{"method": "PATCH", "route": "/x"}); !ok || s.Counter.GetValue() != 1 {
		t.Errorf("PATCH: %v", s)
	}
}

// namedModel is a model whose Info names it as a Go caller configured it.
type namedModel struct {
	model.Model
	info model.Info
}

func (n namedModel) Info() model.Info { return n.info }

func (n namedModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return n.Model.Stream(ctx, req)
}

// A label value that is not UTF-8 (an agent id, a model id, a route a Go
// caller passes) made the Prometheus client panic inside the run's or the
// request's goroutine; it is counted with the bad bytes replaced instead.
func TestMetrics_LabelsThatAreNotUTF8DoNotPanic(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	cfg := agent.Config{ID: "ag\xffent", Model: namedModel{Model: scripted.Reply("hi"), info: model.Info{Provider: "p\xfe", ID: "m\xff"}}}
	m.Instrument(&cfg)
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Runner(a).Run(context.Background(), run.TextInput("x")); err != nil {
		t.Fatal(err)
	}
	m.ObserveHTTP("GET", "/r\xff", 200, time.Millisecond)
	m.ObserveQueueWait("q\xff", time.Millisecond)
	fams := scrape(t, m)
	for name, want := range map[string]map[string]string{
		"agentry_runs_total":                  {"component_id": "ag\uFFFDent"},
		"agentry_model_call_duration_seconds": {"provider": "p\uFFFD", "model": "m\uFFFD"},
		"agentry_http_requests_total":         {"route": "/r\uFFFD"},
		"agentry_queue_wait_seconds":          {"queue": "q\uFFFD"},
	} {
		if _, ok := value(fams, name, want); !ok {
			t.Errorf("%s: no series %v in %v", name, want, fams[name])
		}
	}
}

// One scrape asks the queue once: depth and oldest wait are one reading (a
// database query on the durable queue, bounded by its own timeout), not two
// that could disagree and that doubled a scrape's queries and its wait on a
// slow database.
func TestSetQueueStats_OneReadingPerScrape(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	var calls atomic.Int32
	if err := m.SetQueueStats(func() (int, time.Duration) {
		n := calls.Add(1)
		return int(n), time.Duration(n) * time.Second
	}); err != nil {
		t.Fatal(err)
	}
	for scrapeN := int32(1); scrapeN <= 3; scrapeN++ {
		fams := scrape(t, m)
		if got := calls.Load(); got != scrapeN {
			t.Fatalf("after %d scrapes the queue was asked %d times", scrapeN, got)
		}
		d, _ := value(fams, "agentry_queue_depth", nil)
		w, _ := value(fams, "agentry_queue_oldest_wait_seconds", nil)
		if d.GetGauge().GetValue() != float64(scrapeN) || w.GetGauge().GetValue() != float64(scrapeN) {
			t.Errorf("scrape %d: depth %v, oldest wait %v; want both from reading %d", scrapeN, d, w, scrapeN)
		}
	}
	if err := m.SetQueueStats(func() (int, time.Duration) { return 0, 0 }); err == nil {
		t.Error("a second SetQueueStats was accepted")
	}
}
