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
	controlAliceMarkers = []string{"e-alice", "alice-model", "sch-alice", "sr-alice", "c-alice"}
	controlBobMarkers   = []string{"e-bob", "e-unowned", "bob-model", "unowned-model", "sch-bob", "sch-unowned", "sr-bob", "c-bob"}
	controlMissingTwins = []string{"e-alice", "e-missing", "sch-alice", "sch-missing", "sr-alice", "sr-missing", "c-alice", "c-missing"}
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
	// Schedules of alice, bob and none, each with one run.
	for i, u := range []struct{ id, user string }{{"sch-alice", "alice"}, {"sch-bob", "bob"}, {"sch-unowned", ""}} {
		if _, err := d.CreateSchedule(context.Background(), &db.Schedule{ID: u.id, Name: "n1", Method: "POST", Endpoint: "/agents/echo/runs",
			Payload: json.RawMessage(`{"message":"hi"}`), CronExpr: "0 * * * *", Timezone: "UTC", TimeoutSeconds: 3600, RetryDelaySeconds: 60,
			Enabled: true, NextRunAt: 4_000_000_000, UserID: u.user, TargetType: "agent", TargetID: "echo", CreatedAt: int64(100 + i)}); err != nil {
			t.Fatal(err)
		}
		run := "sr-" + strings.TrimPrefix(u.id, "sch-")
		if _, err := d.CreateScheduleRun(context.Background(), &db.ScheduleRun{ID: run, ScheduleID: u.id, Status: db.ScheduleRunSuccess,
			TriggeredAt: 50, UserID: u.user, CreatedAt: int64(100 + i)}); err != nil {
			t.Fatal(err)
		}
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
	schedules, _, err := d.ListSchedules(ctx, db.ScheduleFilter{Limit: 1000, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range schedules {
		fmt.Fprintf(b, "schedule %s %s %q %q %v %d %s %d\n", s.ID, s.UserID, s.Name, s.Description, s.Enabled, s.NextRunAt, s.CronExpr, s.UpdatedAt)
	}
	runs, _, err := d.ListScheduleRuns(ctx, db.ScheduleRunFilter{Limit: 1000, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		fmt.Fprintf(b, "schedule run %s %s %s %s\n", r.ID, r.ScheduleID, r.UserID, r.Status)
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
	if strings.HasPrefix(path, "/schedules") && strings.Contains(path, "/runs") {
		return []string{"sr-alice"}, true
	}
	if strings.HasPrefix(path, "/schedules") {
		return []string{"sch-alice"}, true
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
	scheduleOwnedBy := func(user string) func(*testing.T, fixture, response) {
		return func(t *testing.T, f fixture, res response) {
			t.Helper()
			var v scheduleView
			if err := json.Unmarshal([]byte(res.body), &v); err != nil || v.ID == "" {
				t.Fatalf("schedule answer %s: %v", res.body, err)
			}
			sc, err := f.db.GetSchedule(context.Background(), v.ID)
			if err != nil || sc.UserID != user {
				t.Errorf("schedule %s = %+v, %v; want owned by %q", v.ID, sc, err, user)
			}
		}
	}
	scheduleIs := func(check func(*db.Schedule) bool) func(*testing.T, fixture, string, response) {
		return func(t *testing.T, f fixture, _ string, _ response) {
			t.Helper()
			if sc, err := f.db.GetSchedule(context.Background(), "sch-alice"); err != nil || !check(sc) || sc.UserID != "alice" {
				t.Errorf("sch-alice = %+v, %v", sc, err)
			}
		}
	}
	scheduleCases := []isoCase{
		{name: "list schedules", method: "GET", path: "/schedules", ok: 200, list: true,
			effect: func(t *testing.T, _ fixture, caller string, res response) {
				t.Helper()
				if seen := strings.Contains(res.body, "sch-unowned"); seen != (caller == admin) {
					t.Errorf("%s sees the unowned schedule: %v (%s)", caller, seen, res.body)
				}
			}},
		{name: "list enabled schedules", method: "GET", path: "/schedules?enabled=true&limit=10&page=1", ok: 200, list: true},
		{name: "create schedule", method: "POST", path: "/schedules", ok: 201, list: true,
			body: `{"name":"created","cron_expr":"0 * * * *","endpoint":"/agents/echo/runs","payload":{"message":"x"}}`,
			effect: func(t *testing.T, f fixture, caller string, res response) {
				scheduleOwnedBy(map[string]string{owner: "alice", admin: ""}[caller])(t, f, res)
			},
			otherEffect: scheduleOwnedBy("bob")},
		{name: "get schedule", method: "GET", path: "/schedules/sch-alice", ok: 200},
		{name: "update schedule", method: "PATCH", path: "/schedules/sch-alice", body: `{"description":"patched"}`, ok: 200,
			effect: scheduleIs(func(sc *db.Schedule) bool { return sc.Description == "patched" })},
		{name: "delete schedule", method: "DELETE", path: "/schedules/sch-alice", ok: 204,
			effect: func(t *testing.T, f fixture, _ string, _ response) {
				if _, err := f.db.GetSchedule(context.Background(), "sch-alice"); err == nil {
					t.Error("sch-alice still exists")
				}
			}},
		{name: "disable schedule", method: "POST", path: "/schedules/sch-alice/disable", ok: 200,
			effect: scheduleIs(func(sc *db.Schedule) bool { return !sc.Enabled })},
		{name: "enable schedule", method: "POST", path: "/schedules/sch-alice/enable", ok: 200,
			effect: scheduleIs(func(sc *db.Schedule) bool { return sc.Enabled && sc.NextRunAt < 4_000_000_000 })},
		// The matrix's server has no scheduler (no durable queue in memory):
		// the owner and the admin are told so, the other user gets a 404.
		{name: "trigger schedule", method: "POST", path: "/schedules/sch-alice/trigger", ok: 503},
		{name: "list schedule runs", method: "GET", path: "/schedules/sch-alice/runs", ok: 200},
		{name: "get schedule run", method: "GET", path: "/schedules/sch-alice/runs/sr-alice", ok: 200},
	}
	return append(append(componentCases(), scheduleCases...), []isoCase{
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
