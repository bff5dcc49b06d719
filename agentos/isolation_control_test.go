package agentos

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
)

// The isolation matrix's rows for the control-plane routes (issue 17):
// alice's objects, bob's, and unowned (NULL user_id) ones no scoped caller
// may see.

var (
	controlAliceMarkers = []string{"e-alice", "alice-model", "c-alice"}
	controlBobMarkers   = []string{"e-bob", "e-unowned", "bob-model", "unowned-model", "c-bob"}
	controlMissingTwins = []string{"e-alice", "e-missing", "c-alice", "c-missing"}
)

// seedControlPlane stores alice's, bob's and an unowned eval run.
func seedControlPlane(t *testing.T, d *db.DB) {
	t.Helper()
	for _, e := range []db.EvalRun{
		{RunID: "e-alice", EvalType: "reliability", AgentID: "echo", UserID: "alice", CreatedAt: 100},
		{RunID: "e-bob", EvalType: "accuracy", AgentID: "echo", UserID: "bob", CreatedAt: 200},
		{RunID: "e-unowned", EvalType: "performance", AgentID: "echo", CreatedAt: 300},
	} {
		e.EvalData = json.RawMessage(`{"eval_status":"PASSED"}`)
		if _, err := d.CreateEvalRun(context.Background(), &e); err != nil {
			t.Fatal(err)
		}
	}
	// A completed day of metrics for alice, bob and unowned runs, each
	// marked by its model's name.
	var rows []db.DailyMetrics
	for _, u := range []struct{ user, model string }{{"alice", "alice-model"}, {"bob", "bob-model"}, {"", "unowned-model"}} {
		rows = append(rows, db.DailyMetrics{ID: "metrics-" + u.model, UserID: u.user, Date: "2026-01-05", AgentRunsCount: 1,
			AgentSessionsCount: 1, TokenMetrics: json.RawMessage(`{"input_tokens":3}`),
			ModelMetrics:      json.RawMessage(`[{"model_id":"` + u.model + `","model_provider":"P","count":1}]`),
			AggregationPeriod: db.DailyMetricsPeriod, Completed: true, CreatedAt: 100, UpdatedAt: 100})
	}
	if err := d.Driver().(db.MetricsDriver).UpsertDailyMetrics(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	seedComponents(t, d)
}

// controlPlaneView renders the control-plane rows a scope sees, for the
// matrix's before/after comparison.
func controlPlaneView(t *testing.T, d *db.DB, ctx context.Context, b *strings.Builder) {
	t.Helper()
	evals, _, err := d.ListEvalRuns(ctx, db.EvalFilter{Limit: 1000, Page: 1, SortOrder: db.Asc})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evals {
		fmt.Fprintf(b, "eval %s %s %q %d\n", e.RunID, e.UserID, e.Name, e.UpdatedAt)
	}
	componentsView(t, d, ctx, b)
}

// controlMarkersIn names the alice object a control-plane read route shows.
func controlMarkersIn(path string) ([]string, bool) {
	if strings.HasPrefix(path, "/eval-runs") {
		return []string{"e-alice"}, true
	}
	if strings.HasPrefix(path, "/metrics") {
		return []string{"alice-model"}, true
	}
	if strings.HasPrefix(path, "/components") {
		return []string{"c-alice"}, true
	}
	return nil, false
}

func controlPlaneCases(f fixture) []isoCase {
	evalOwnedBy := func(user string) func(*testing.T, fixture, response) {
		return func(t *testing.T, f fixture, res response) {
			t.Helper()
			var v evalView
			if err := json.Unmarshal([]byte(res.body), &v); err != nil || v.ID == "" {
				t.Fatalf("eval answer %s: %v", res.body, err)
			}
			e, err := f.db.GetEvalRun(context.Background(), v.ID)
			if err != nil || e.UserID != user {
				t.Errorf("eval run %s = %+v, %v; want owned by %q", v.ID, e, err, user)
			}
		}
	}
	// The unowned run is invisible to a scoped caller, visible to an admin.
	unownedOnlyForAdmin := func(t *testing.T, _ fixture, caller string, res response) {
		t.Helper()
		if seen := strings.Contains(res.body, "e-unowned"); seen != (caller == admin) {
			t.Errorf("%s sees the unowned eval run: %v (%s)", caller, seen, res.body)
		}
		if caller == admin && !strings.Contains(res.body, "e-bob") {
			t.Errorf("admin does not see bob's eval run: %s", res.body)
		}
	}
	return append(componentCases(), []isoCase{
		{name: "list eval runs", method: "GET", path: "/eval-runs", ok: 200, list: true, effect: unownedOnlyForAdmin},
		{name: "list eval runs filtered to alice", method: "GET", path: "/eval-runs?user_id=alice&agent_id=echo&eval_types=reliability,accuracy", ok: 200, list: true},
		{name: "get eval run", method: "GET", path: "/eval-runs/e-alice", ok: 200},
		{name: "get eval run as alice", method: "GET", path: "/eval-runs/e-alice?user_id=alice", ok: 200},
		{name: "rename eval run", method: "PATCH", path: "/eval-runs/e-alice", body: `{"name":"renamed"}`, ok: 200,
			effect: func(t *testing.T, f fixture, _ string, _ response) {
				if e, err := f.db.GetEvalRun(context.Background(), "e-alice"); err != nil || e.Name != "renamed" || e.UserID != "alice" {
					t.Errorf("e-alice = %+v, %v", e, err)
				}
			}},
		{name: "delete eval runs", method: "DELETE", path: "/eval-runs", body: `{"eval_run_ids":["e-alice","e-unowned"]}`, ok: 204, list: true,
			effect: func(t *testing.T, f fixture, caller string, _ response) {
				if _, err := f.db.GetEvalRun(context.Background(), "e-alice"); err == nil {
					t.Error("e-alice still exists")
				}
				if _, err := f.db.GetEvalRun(context.Background(), "e-unowned"); (err == nil) != (caller == owner) {
					t.Errorf("unowned eval run after %s's delete: %v", caller, err)
				}
			}},
		{name: "get metrics", method: "GET", path: "/metrics", ok: 200, list: true,
			effect: func(t *testing.T, _ fixture, caller string, res response) {
				t.Helper()
				if all := strings.Contains(res.body, "bob-model") && strings.Contains(res.body, "unowned-model"); all != (caller == admin) {
					t.Errorf("%s's metrics: %s", caller, res.body)
				}
			}},
		{name: "get metrics of alice", method: "GET", path: "/metrics?user_id=alice&starting_date=2026-01-01&ending_date=2026-01-31", ok: 200, list: true},
		{name: "refresh metrics", method: "POST", path: "/metrics/refresh", ok: 200, list: true},
		{name: "run an eval for alice", method: "POST", path: "/eval-runs",
			body: `{"agent_id":"echo","eval_type":"reliability","input":"hi","expected_tool_calls":[],"user_id":"alice"}`, ok: 200, list: true,
			effect:      func(t *testing.T, f fixture, _ string, res response) { evalOwnedBy("alice")(t, f, res) },
			otherEffect: evalOwnedBy("bob")},
	}...)
}
