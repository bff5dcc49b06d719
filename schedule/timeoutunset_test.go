package schedule_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/schedule"
)

// TestTick_AnUnsetTimeoutBoundsTheRunAtAnHour: a schedule whose
// timeout_seconds is 0 (written around the API; Agno's column is NOT NULL
// and its routes take 1 to 86,400) bounds its firing's run by 3,600 s, as
// Agno's executor does (timeout_seconds or its default, 3600) and as the
// scheduler already bounds such a schedule's abandoned attempts. Before,
// the run was never timed out: a hung run's firing stayed running for
// ever. SQLite and Postgres.
func TestTick_AnUnsetTimeoutBoundsTheRunAtAnHour(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := testdbs.All[name](t)
			now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
			sc, err := d.CreateSchedule(ctx, &db.Schedule{ID: "s1", Name: "nightly", Method: "POST", Endpoint: "/agents/a/runs",
				CronExpr: "0 3 * * *", Timezone: "UTC", Enabled: true, NextRunAt: now.Add(time.Hour).Unix(), CreatedAt: now.Unix()})
			if err != nil {
				t.Fatal(err)
			}
			if sc.TimeoutSeconds != 0 {
				t.Fatalf("timeout_seconds stored as %d, want 0", sc.TimeoutSeconds)
			}
			if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "sess", SessionType: run.TypeAgent, AgentID: "a", CreatedAt: now.Unix()}); err != nil {
				t.Fatal(err)
			}
			for id, age := range map[string]time.Duration{"old": 3601 * time.Second, "young": 3599 * time.Second} {
				if _, err := d.UpsertRun(ctx, &db.Run{RunID: "run-" + id, SessionID: "sess", RunType: run.TypeAgent, AgentID: "a",
					Status: run.StatusRunning, RunData: []byte(`{}`), CreatedAt: now.Unix()}); err != nil {
					t.Fatal(err)
				}
				if _, err := d.CreateScheduleRun(ctx, &db.ScheduleRun{ID: "sr-" + id, ScheduleID: sc.ID, Attempt: 1, TriggeredAt: now.Add(-age).Unix(),
					Status: db.ScheduleRunRunning, RunID: "run-" + id, CreatedAt: now.Add(-age).Unix()}); err != nil {
					t.Fatal(err)
				}
			}
			s, err := schedule.New(d, neverFirer{t}, schedule.Config{Clock: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			old, err := d.GetScheduleRun(ctx, "sr-old")
			if err != nil {
				t.Fatal(err)
			}
			if old.Status != db.ScheduleRunFailed || !strings.Contains(old.Error, "timeout_seconds (3600 s)") {
				t.Errorf("firing running for 3,601 s: %s %q, want failed past 3600 s", old.Status, old.Error)
			}
			young, err := d.GetScheduleRun(ctx, "sr-young")
			if err != nil {
				t.Fatal(err)
			}
			if young.Status != db.ScheduleRunRunning {
				t.Errorf("firing running for 3,599 s: %s %q, want still running", young.Status, young.Error)
			}
		})
	}
}
