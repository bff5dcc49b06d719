package metrics_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/metrics"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// scrape parses the handler's text exposition with Prometheus's own parser.
func scrape(t *testing.T, m *metrics.Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/prometheus", nil))
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		t.Fatalf("exposition does not parse: %v\n%s", err, rec.Body)
	}
	return fams
}

// value finds the sample of a family whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (*dto.Metric, bool) {
	f, ok := fams[name]
	if !ok {
		return nil, false
	}
	for _, m := range f.Metric {
		match := true
		for k, v := range want {
			found := false
			for _, l := range m.Label {
				if l.GetName() == k && l.GetValue() == v {
					found = true
				}
			}
			match = match && found
		}
		if match {
			return m, true
		}
	}
	return nil, false
}

func TestMetrics_RunsModelsTokensQueue(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	cfg := agent.Config{ID: "echo", Model: scripted.Reply("hi")}
	m.Instrument(&cfg)
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := m.Runner(a)
	for range 2 {
		if _, err := r.Run(context.Background(), run.TextInput("x")); err != nil {
			t.Fatal(err)
		}
	}
	for _, err := range r.Stream(context.Background(), run.TextInput("x")) {
		if err != nil {
			t.Fatal(err)
		}
	}
	m.ObserveHTTP("GET", "/sessions", 200, time.Millisecond)
	m.ObserveHTTP("GET", "", 404, time.Millisecond)
	if err := m.SetQueueStats(func() (int, time.Duration) { return 3, 1500 * time.Millisecond }); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, m)
	if s, ok := value(fams, "agentry_runs_total", map[string]string{"component_type": "agent", "component_id": "echo", "status": "COMPLETED"}); !ok || s.Counter.GetValue() != 3 {
		t.Errorf("runs_total = %v", s)
	}
	if s, ok := value(fams, "agentry_run_duration_seconds", map[string]string{"component_id": "echo"}); !ok || s.Histogram.GetSampleCount() != 3 {
		t.Errorf("run duration = %v", s)
	}
	if s, ok := value(fams, "agentry_model_call_duration_seconds", map[string]string{"model": "scripted", "outcome": "ok"}); !ok || s.Histogram.GetSampleCount() != 3 {
		t.Errorf("model calls = %v", s)
	}
	if _, ok := value(fams, "agentry_model_tokens_total", map[string]string{"direction": "input"}); !ok {
		t.Errorf("no token counter: %v", fams["agentry_model_tokens_total"])
	}
	if s, ok := value(fams, "agentry_http_requests_total", map[string]string{"route": "/sessions", "status": "200"}); !ok || s.Counter.GetValue() != 1 {
		t.Errorf("http = %v", s)
	}
	if _, ok := value(fams, "agentry_http_requests_total", map[string]string{"route": "unmatched", "status": "404"}); !ok {
		t.Errorf("unmatched route not folded")
	}
	if s, ok := value(fams, "agentry_queue_depth", nil); !ok || s.Gauge.GetValue() != 3 {
		t.Errorf("queue depth = %v", s)
	}
	if s, ok := value(fams, "agentry_queue_oldest_wait_seconds", nil); !ok || s.Gauge.GetValue() != 1.5 {
		t.Errorf("queue wait = %v", s)
	}
}

func TestMetrics_NoQueueSeriesWithoutTheHook(t *testing.T) {
	t.Parallel()
	if _, ok := scrape(t, metrics.New())["agentry_queue_depth"]; ok {
		t.Error("queue depth exported before the queue set its hook")
	}
	var nilM *metrics.Metrics
	cfg := agent.Config{Model: scripted.Reply("x")}
	before := cfg.Model
	nilM.Instrument(&cfg)
	if cfg.Model != before {
		t.Error("a nil Metrics wrapped the model")
	}
}

// A streamed run its consumer stops reading (a client gone) is counted
// with the status it is stored with, not as a finished run "RUNNING".
func TestMetrics_StreamStoppedByItsConsumerIsCountedAsStored(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	d := db.New("", memory.New())
	a, err := agent.New(agent.Config{ID: "echo", Model: scripted.Reply("hi"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	var runID string
	for ev, err := range m.Runner(a).Stream(context.Background(), run.TextInput("x")) {
		if err != nil {
			t.Fatal(err)
		}
		runID = ev.RunID
		break
	}
	row, err := d.GetRun(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, m)
	if s, ok := value(fams, "agentry_runs_total", map[string]string{"component_id": "echo", "status": string(row.Status)}); !ok || s.Counter.GetValue() != 1 {
		t.Errorf("runs_total for a stream stopped by its consumer (stored %s): %v", row.Status, fams["agentry_runs_total"])
	}
}

// A team's stream carries its member's run's events: the member's
// RunCompleted is not the team run's end, and a team stream stopped after
// it is counted as the team run is stored (CANCELLED), not COMPLETED.
func TestMetrics_TeamStreamCountsTheTeamRunsOwnEnd(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	d := db.New("", memory.New())
	member, err := agent.New(agent.Config{ID: "a", Name: "A", Model: scripted.Reply("answer a"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	tm, err := team.New(team.Config{ID: "crew", DB: d, Members: []*agent.Agent{member}, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: team.ToolDelegate, Args: map[string]any{"member_id": "a", "task": "t"}}}}, {Content: "done"}}})})
	if err != nil {
		t.Fatal(err)
	}
	var teamRunID string
	sawMember := false
	for ev, err := range m.Runner(tm).Stream(context.Background(), run.TextInput("x")) {
		if err != nil {
			t.Fatal(err)
		}
		if teamRunID == "" {
			teamRunID = ev.RunID
		}
		if ev.Event == run.EventRunCompleted && ev.RunID != teamRunID {
			sawMember = true
			break
		}
	}
	if !sawMember {
		t.Fatal("the team's stream carried no member RunCompleted")
	}
	row, err := d.GetRun(context.Background(), teamRunID)
	if err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, m)
	if s, ok := value(fams, "agentry_runs_total", map[string]string{"component_id": "crew", "status": string(row.Status)}); !ok || s.Counter.GetValue() != 1 {
		t.Errorf("runs_total for a team stream stopped after its member's end (stored %s): %v", row.Status, fams["agentry_runs_total"])
	}
}

// A run that does not start (here: an option the component cannot honour)
// is not a run: agentry_runs_total counted it as an ERROR run, so a client
// sending bad requests raised the servers' run error rate.
func TestMetrics_ARunThatDoesNotStartIsNotCounted(t *testing.T) {
	t.Parallel()
	m := metrics.New()
	a, err := agent.New(agent.Config{ID: "echo", Model: scripted.Reply("hi"), DB: db.New("", memory.New())})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := m.Runner(a).Run(context.Background(), run.TextInput("x")); err != nil || out == nil {
		t.Fatal(err)
	}
	// A workflow has no model context: it refuses WithMemberHistory before
	// the run starts.
	refuse := agent.WithMemberHistory
	w, err := workflow.New(workflow.Config{ID: "wf", Steps: []workflow.Step{{Name: "s", Func: func(context.Context, *workflow.StepInput) (workflow.FuncResult, error) {
		return workflow.FuncResult{Content: "ok"}, nil
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	rw := m.Runner(w)
	if out, err := rw.Run(context.Background(), run.TextInput("x"), refuse()); err == nil || out != nil {
		t.Fatalf("refused run: %v, %v", out, err)
	}
	n := 0
	for _, err := range rw.Stream(context.Background(), run.TextInput("x"), refuse()) {
		n++
		if err == nil {
			t.Fatal("refused stream yielded an event")
		}
	}
	if n != 1 {
		t.Fatalf("refused stream yielded %d items", n)
	}
	fams := scrape(t, m)
	if s, ok := value(fams, "agentry_runs_total", map[string]string{"component_id": "wf"}); ok {
		t.Errorf("refused runs counted: %v", s)
	}
	if s, ok := value(fams, "agentry_runs_total", map[string]string{"component_id": "echo", "status": "COMPLETED"}); !ok || s.Counter.GetValue() != 1 {
		t.Errorf("runs_total = %v", s)
	}
}
