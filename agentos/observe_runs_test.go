package agentos

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	promodel "github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentryhq/agentry/metrics"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/trace"
)

// scrape reads /prometheus with Prometheus's own text parser.
func scrape(t *testing.T, u string) map[string]*dto.MetricFamily {
	t.Helper()
	res := get(t, u+"/prometheus", nil)
	if res.status != http.StatusOK {
		t.Fatalf("/prometheus = %d %s", res.status, res.body)
	}
	p := expfmt.NewTextParser(promodel.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(res.body))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// runsByStatus sums agentry_runs_total by "type/id status".
func runsByStatus(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range fams["agentry_runs_total"].GetMetric() {
		l := labels(m)
		out[l["component_type"]+"/"+l["component_id"]+" "+l["status"]] += m.GetCounter().GetValue()
	}
	return out
}

// TestTelemetry_ServerRunsAreCountedAndTraced starts runs of every kind the
// server starts them (foreground, streamed, background; agent, team,
// workflow) and checks each is counted by component and final status in the
// scrape, and is an invoke_agent span under its request's span, carrying
// the run's ids and owner, with the model's chat spans under it.
func TestTelemetry_ServerRunsAreCountedAndTraced(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	f := newTeamFixture(t, Config{Telemetry: Telemetry{Metrics: metrics.New(), TracerProvider: tp}})
	for _, c := range []struct{ path, stream string }{
		{"/agents/writer/runs", "false"}, {"/agents/writer/runs", "true"},
		{"/teams/crew/runs", "false"}, {"/teams/crew/runs", "true"},
		{"/workflows/pipeline/runs", "false"}, {"/workflows/pipeline/runs", "true"},
	} {
		if res := postForm(t, f.url+c.path, map[string]string{"message": "go", "stream": c.stream, "user_id": "carol"}, nil); res.status != http.StatusOK {
			t.Fatalf("%s stream=%s: %d %s", c.path, c.stream, res.status, res.body)
		}
	}
	acc := decode[backgroundAccepted](t, postForm(t, f.url+"/agents/reviewer/runs", map[string]string{"message": "go", "background": "true"}, nil))
	waitStatus(t, f.db, acc.RunID, run.StatusCompleted)
	var counts map[string]float64
	eventually(t, "the background run is counted", func() bool {
		counts = runsByStatus(scrape(t, f.url))
		return counts["agent/reviewer COMPLETED"] == 1
	})
	// The writer runs on its own twice, and once more per team run (a
	// member run, inside the team's run: not a run the server started).
	want := map[string]float64{"agent/writer COMPLETED": 2, "team/crew COMPLETED": 2, "workflow/pipeline COMPLETED": 2, "agent/reviewer COMPLETED": 1}
	for k, v := range want {
		if counts[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, counts[k], v, counts)
		}
	}
	fams := scrape(t, f.url)
	var waited uint64
	for _, m := range fams["agentry_queue_wait_seconds"].GetMetric() {
		if labels(m)["queue"] == "background" {
			waited = m.GetHistogram().GetSampleCount()
		}
	}
	if waited != 1 {
		t.Errorf("background queue wait observations = %d, want 1", waited)
	}
	if fams["agentry_background_runs_queued"] == nil {
		t.Error("no agentry_background_runs_queued gauge")
	}

	spans := exp.GetSpans()
	byID := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID().String()] = s
	}
	runSpans := map[string]int{}
	for _, s := range spans {
		a := spanAttrs(s)
		if a[trace.AttrOperation] != "invoke_agent" {
			continue
		}
		parent, ok := byID[s.Parent.SpanID().String()]
		if !ok {
			t.Errorf("run span %s has no parent in the trace", s.Name)
			continue
		}
		if parent.SpanKind.String() == "server" {
			runSpans[a[trace.AttrComponentType]+"/"+a[trace.AttrAgentID]]++
			if a[trace.AttrRunID] == "" || a[trace.AttrRunStatus] != "COMPLETED" || a[trace.AttrConversationID] == "" {
				t.Errorf("run span %s: %v", s.Name, a)
			}
			if a[trace.AttrAgentID] != "reviewer" && a[trace.AttrUserID] != "carol" {
				t.Errorf("run span %s lacks its owner: %v", s.Name, a)
			}
		}
	}
	if runSpans["agent/writer"] != 2 || runSpans["team/crew"] != 2 || runSpans["workflow/pipeline"] != 2 {
		t.Errorf("run spans under request spans: %v", runSpans)
	}
	// Every chat span descends from a run span.
	for _, s := range spans {
		if spanAttrs(s)[trace.AttrOperation] != "chat" {
			continue
		}
		found := false
		for p, ok := byID[s.Parent.SpanID().String()]; ok; p, ok = byID[p.Parent.SpanID().String()] {
			if spanAttrs(p)[trace.AttrOperation] == "invoke_agent" {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("chat span %s is not under a run span", s.Name)
		}
	}
}

func spanAttrs(s tracetest.SpanStub) map[attribute.Key]string {
	out := map[attribute.Key]string{}
	for _, kv := range s.Attributes {
		out[kv.Key] = kv.Value.String()
	}
	return out
}

// TestTelemetry_DurableQueueRunsAreCounted: a run through the durable
// queue is counted by status, its wait is observed, and the queue's depth
// is exposed.
func TestTelemetry_DurableQueueRunsAreCounted(t *testing.T) {
	t.Parallel()
	u, d, _ := durableServer(t, scripted.Reply("done"), queue.Config{}, Config{Telemetry: Telemetry{Metrics: metrics.New()}})
	acc := accepted(t, postForm(t, u+"/agents/echo/runs", map[string]string{"message": "hi", "background": "true"}, nil))
	waitStatus(t, d, acc.RunID, run.StatusCompleted)
	var fams map[string]*dto.MetricFamily
	eventually(t, "the queued run is counted", func() bool {
		fams = scrape(t, u)
		return runsByStatus(fams)["agent/echo COMPLETED"] == 1
	})
	var waited uint64
	for _, m := range fams["agentry_queue_wait_seconds"].GetMetric() {
		if labels(m)["queue"] == "durable" {
			waited = m.GetHistogram().GetSampleCount()
		}
	}
	if waited != 1 {
		t.Errorf("durable queue wait observations = %d", waited)
	}
	if depth := fams["agentry_queue_depth"].GetMetric(); len(depth) != 1 || depth[0].GetGauge().GetValue() != 0 {
		t.Errorf("agentry_queue_depth = %v", depth)
	}
}

// TestTelemetry_ContinuedRunsAreCounted: a paused run counts PAUSED; its
// continuation (sync and streamed) counts by its final status and is a run
// span with the run's owner.
func TestTelemetry_ContinuedRunsAreCounted(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	f := newRunsFixture(t, Config{Telemetry: Telemetry{Metrics: metrics.New(), TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))}})
	for _, stream := range []string{"false", "true"} {
		paused := decode[run.Output](t, postForm(t, f.url+"/agents/hitl/runs", map[string]string{"message": "delete", "stream": "false", "user_id": "dana"}, nil))
		if paused.Status != run.StatusPaused {
			t.Fatalf("paused run = %s", paused.Status)
		}
		confirm := fmt.Sprintf(`[{"tool_call_id":%q,"confirmed":true}]`, paused.Tools[0].ToolCallID)
		res := postForm(t, f.url+"/agents/hitl/runs/"+paused.RunID+"/continue", map[string]string{"tools": confirm, "stream": stream}, nil)
		if res.status != http.StatusOK || storedStatus(f.db, paused.RunID) != run.StatusCompleted {
			t.Fatalf("continue stream=%s: %d %s", stream, res.status, res.body)
		}
	}
	counts := runsByStatus(scrape(t, f.url))
	if counts["agent/hitl PAUSED"] != 2 || counts["agent/hitl COMPLETED"] != 2 {
		t.Errorf("counts %v", counts)
	}
	var continued int
	for _, s := range exp.GetSpans() {
		a := spanAttrs(s)
		if a[trace.AttrOperation] == "invoke_agent" && a[trace.AttrRunStatus] == "COMPLETED" && a[trace.AttrUserID] == "dana" {
			continued++
		}
	}
	if continued != 2 {
		t.Errorf("continued run spans: %d", continued)
	}
}
