package schedule_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/schedule"
)

// TestTick_RefusesAManagedScheduleWhoseEndpointLeftItsTarget: Agno 3.0's
// executor refuses to fire a schedule a control plane manages
// (managed_by, with target_type and target_id) whose endpoint no longer
// addresses that target (repointed by a writer that left the provenance
// as it was): it records a failed firing and disables the schedule with
// disabled_reason "endpoint_drift:{endpoint}!={type}:{id}", on the poll,
// on a manual trigger, and here on a waiting retry too. Before, Agentry
// fired the endpoint: a run of a component the schedule's provenance does
// not name. A managed schedule whose endpoint matches (a trailing slash
// too) and an unmanaged one still fire. SQLite, Postgres and the memory
// driver.
func TestTick_RefusesAManagedScheduleWhoseEndpointLeftItsTarget(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres", "memory"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := testdbs.All[name](t)
			now := time.Date(2026, 12, 5, 12, 0, 30, 0, time.UTC)
			for _, sc := range []*db.Schedule{
				{ID: "drifted", Endpoint: "/agents/b/runs", ManagedBy: "studio", NextRunAt: now.Add(-30 * time.Second).Unix()},
				{ID: "matching", Endpoint: "/agents/a/runs/", ManagedBy: "studio", NextRunAt: now.Add(-30 * time.Second).Unix()},
				{ID: "unmanaged", Endpoint: "/agents/b/runs", NextRunAt: now.Add(-30 * time.Second).Unix()},
				{ID: "triggered", Endpoint: "/teams/a/runs", ManagedBy: "studio", NextRunAt: now.Add(time.Hour).Unix()},
			} {
				sc.Name, sc.Method, sc.CronExpr, sc.Timezone, sc.Enabled, sc.CreatedAt = sc.ID, "POST", "* * * * *", "UTC", true, now.Unix()
				sc.TargetType, sc.TargetID = "agent", "a"
				if _, err := d.CreateSchedule(ctx, sc); err != nil {
					t.Fatal(err)
				}
			}
			f := &keyedFirer{}
			s, err := schedule.New(d, f, schedule.Config{Clock: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			tr, err := d.GetSchedule(ctx, "triggered")
			if err != nil {
				t.Fatal(err)
			}
			row, err := s.Trigger(ctx, tr)
			if err != nil {
				t.Fatal(err)
			}
			if row.Status != db.ScheduleRunFailed || !strings.Contains(row.Error, "provenance target agent:a") {
				t.Errorf("trigger of a drifted schedule: status %q, error %q; want failed, naming its target", row.Status, row.Error)
			}
			for key := range f.runs {
				if !strings.Contains(key, "matching@") && !strings.Contains(key, "unmanaged@") {
					t.Errorf("fired %s", key)
				}
			}
			if len(f.runs) != 2 {
				t.Errorf("%d runs started, want 2 (matching, unmanaged): %v", len(f.runs), f.runs)
			}
			for id, want := range map[string]string{"drifted": "endpoint_drift:/agents/b/runs!=agent:a", "triggered": "endpoint_drift:/teams/a/runs!=agent:a",
				"matching": "", "unmanaged": ""} {
				sc, err := d.GetSchedule(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				if sc.DisabledReason != want || sc.Enabled != (want == "") {
					t.Errorf("%s: enabled %v, disabled_reason %q; want %q", id, sc.Enabled, sc.DisabledReason, want)
				}
				runs, _, err := d.ListScheduleRuns(ctx, db.ScheduleRunFilter{ScheduleID: id, Limit: 10, Page: 1})
				if err != nil {
					t.Fatal(err)
				}
				// A run started (its row says it ended: the test stores no
				// run), or none, failed for the drift.
				refused := len(runs) == 1 && runs[0].RunID == "" && runs[0].Status == db.ScheduleRunFailed &&
					strings.Contains(runs[0].Error, "does not match its provenance target agent:a")
				if len(runs) != 1 || refused != (want != "") {
					t.Errorf("%s: schedule runs %+v; want one, failed for the drift when refused, else with a run", id, runs)
				}
			}
		})
	}
}

// TestTick_RefusesARetryOfAScheduleRepointedSinceItsFirstAttempt: a
// managed schedule's endpoint repointed away from its target after a
// failed attempt: the waiting retry is failed, not fired, and the
// schedule disabled for the drift. SQLite, Postgres and the memory driver.
func TestTick_RefusesARetryOfAScheduleRepointedSinceItsFirstAttempt(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres", "memory"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := testdbs.All[name](t)
			now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
			sc, err := d.CreateSchedule(ctx, &db.Schedule{ID: "s1", Name: "s1", Method: "POST", Endpoint: "/agents/a/runs", CronExpr: "0 3 * * *",
				Timezone: "UTC", Enabled: true, MaxRetries: 1, RetryDelaySeconds: 60, ManagedBy: "studio", TargetType: "agent", TargetID: "a",
				NextRunAt: now.Add(time.Hour).Unix(), CreatedAt: now.Unix()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "sess", SessionType: run.TypeAgent, AgentID: "a", CreatedAt: now.Unix()}); err != nil {
				t.Fatal(err)
			}
			if _, err := d.UpsertRun(ctx, &db.Run{RunID: "r1", SessionID: "sess", RunType: run.TypeAgent, AgentID: "a", Status: run.StatusError,
				RunData: []byte(`{}`), CreatedAt: now.Unix()}); err != nil {
				t.Fatal(err)
			}
			due := now.Add(-time.Minute)
			if _, err := d.CreateScheduleRun(ctx, &db.ScheduleRun{ID: uuid.NewSHA1(uuid.NameSpaceURL, []byte(schedule.Key(sc.ID, due))).String(), ScheduleID: sc.ID, Attempt: 1,
				TriggeredAt: due.Unix(), Status: db.ScheduleRunRunning, RunID: "r1", CreatedAt: now.Unix()}); err != nil {
				t.Fatal(err)
			}
			f := &keyedFirer{}
			tick := func(at time.Time) {
				t.Helper()
				s, err := schedule.New(d, f, schedule.Config{Clock: func() time.Time { return at }})
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Tick(ctx); err != nil {
					t.Fatal(err)
				}
			}
			tick(now) // attempt 1 failed: attempt 2 waits for its delay
			repointed := *sc
			repointed.Endpoint = "/agents/b/runs"
			if _, err := d.EditSchedule(ctx, sc, &repointed); err != nil {
				t.Fatal(err)
			}
			tick(now.Add(2 * time.Minute))
			if len(f.runs) != 0 {
				t.Errorf("fired %v", f.runs)
			}
			runs, _, err := d.ListScheduleRuns(ctx, db.ScheduleRunFilter{ScheduleID: sc.ID, Attempt: 2, Limit: 10, Page: 1})
			if err != nil {
				t.Fatal(err)
			}
			if len(runs) != 1 || runs[0].Status != db.ScheduleRunFailed || !strings.Contains(runs[0].Error, "provenance target") {
				t.Errorf("attempt 2: %+v; want failed for the drift", runs)
			}
			got, err := d.GetSchedule(ctx, sc.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Enabled || !strings.HasPrefix(got.DisabledReason, schedule.DriftReasonPrefix) {
				t.Errorf("schedule: enabled %v, disabled_reason %q; want disabled for the drift", got.Enabled, got.DisabledReason)
			}
		})
	}
}
