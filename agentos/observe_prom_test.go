package agentos

import (
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	promodel "github.com/prometheus/common/model"

	"github.com/agentryhq/agentry/metrics"
)

// TestPrometheus_CountsRequestsByRoutePattern scrapes /prometheus after a
// few requests and parses it with Prometheus's text parser: requests are
// labelled by route pattern (never by concrete path) and status.
func TestPrometheus_CountsRequestsByRoutePattern(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{Telemetry: Telemetry{Metrics: metrics.New()}})
	get(t, f.url+"/sessions/s-alice", nil)
	get(t, f.url+"/sessions/s-bob", nil)
	get(t, f.url+"/sessions/nope", nil)
	res := get(t, f.url+"/prometheus", nil)
	if res.status != 200 {
		t.Fatalf("%d %s", res.status, res.body)
	}
	p := expfmt.NewTextParser(promodel.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(res.body))
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]float64{}
	for _, m := range fams["agentry_http_requests_total"].GetMetric() {
		var route, status string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "route":
				route = l.GetValue()
			case "status":
				status = l.GetValue()
			}
		}
		counts[route+" "+status] += m.GetCounter().GetValue()
	}
	if counts["/sessions/{session_id} 200"] != 2 || counts["/sessions/{session_id} 404"] != 1 {
		t.Errorf("request counts %v", counts)
	}
	if strings.Contains(res.body, "s-alice") {
		t.Error("a concrete path became a label")
	}
	if res := get(t, newFixture(t, Config{}).url+"/prometheus", nil); res.status != 404 {
		t.Errorf("/prometheus with metrics off = %d", res.status)
	}
}
