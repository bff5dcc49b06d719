package agentos

import (
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMetrics_RefreshThenGet(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{}) // alice and bob each ran echo today
	if res := get(t, f.url+"/metrics", nil); res.status != 200 || !strings.Contains(res.body, `{"metrics":[],"updated_at":null}`) {
		t.Fatalf("before refresh: %d %s", res.status, res.body)
	}
	res := do(t, "POST", f.url+"/metrics/refresh", nil, nil)
	refreshed := decode[[]map[string]any](t, res)
	if res.status != 200 || len(refreshed) != 1 || refreshed[0]["agent_runs_count"] != 2.0 || refreshed[0]["users_count"] != 2.0 {
		t.Fatalf("refresh = %d %s", res.status, res.body)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	all := decode[struct {
		Metrics   []map[string]any
		UpdatedAt *string `json:"updated_at"`
	}](t, get(t, f.url+"/metrics?starting_date="+today, nil))
	if len(all.Metrics) != 1 || all.Metrics[0]["date"] != today+"T00:00:00Z" || all.UpdatedAt == nil ||
		all.Metrics[0]["agent_sessions_count"] != 2.0 {
		t.Fatalf("all = %+v", all)
	}
	models := all.Metrics[0]["model_metrics"].([]any)
	if len(models) != 1 || models[0].(map[string]any)["count"] != 2.0 || models[0].(map[string]any)["model_id"] != "scripted" {
		t.Errorf("model_metrics = %v", models)
	}
	alice := decode[struct{ Metrics []map[string]any }](t, get(t, f.url+"/metrics?user_id=alice", nil))
	if len(alice.Metrics) != 1 || alice.Metrics[0]["agent_runs_count"] != 1.0 || alice.Metrics[0]["users_count"] != 1.0 {
		t.Errorf("alice = %+v", alice)
	}
	if res := get(t, f.url+"/metrics?starting_date=yesterday", nil); res.status != 422 {
		t.Errorf("bad date = %d", res.status)
	}
}

// TestMetrics_ConcurrentRefreshes: refreshes racing each other either run
// or answer already_running; the stored day is right either way.
func TestMetrics_ConcurrentRefreshes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	var wg sync.WaitGroup
	statuses := make([]int, 4)
	for i := range statuses {
		wg.Go(func() { statuses[i] = do(t, "POST", f.url+"/metrics/refresh", nil, nil).status })
	}
	wg.Wait()
	for _, s := range statuses {
		if s != 200 {
			t.Fatalf("statuses %v", statuses)
		}
	}
	if res := do(t, "POST", f.url+"/metrics/refresh", nil, nil); res.status != 200 {
		t.Fatal(res.body)
	}
	all := decode[struct{ Metrics []map[string]any }](t, get(t, f.url+"/metrics", nil))
	if len(all.Metrics) != 1 || all.Metrics[0]["agent_runs_count"] != 2.0 {
		t.Errorf("after concurrent refreshes: %+v", all.Metrics)
	}
}
