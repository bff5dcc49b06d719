package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/schedule"
)

// TestTick_APausedFiringRecordsItsRunsRequirements: a firing whose run
// paused records what the run waits for in its requirements, as Agno's
// executor does, so GET /schedules/{id}/runs shows it; they were null.
func TestTick_APausedFiringRecordsItsRunsRequirements(t *testing.T) {
	t.Parallel()
	reqs := `[{"id":"call_1","kind":"confirmation","tool_execution":{"tool_call_id":"call_1","tool_name":"delete_file","requires_confirmation":true}}]`
	for name, d := range map[string]*db.DB{"sqlite": testdbs.SQLite(t), "postgres": testdbs.Postgres(t), "mysql": testdbs.MySQL(t), "memory": testdbs.Memory(t)} {
		ctx := context.Background()
		now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
		sc, err := d.CreateSchedule(ctx, &db.Schedule{ID: "s1", Name: "nightly", Method: "POST", Endpoint: "/agents/a/runs",
			CronExpr: "0 3 * * *", Timezone: "UTC", Enabled: true, NextRunAt: now.Add(time.Hour).Unix(), CreatedAt: now.Unix()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "sess", SessionType: run.TypeAgent, AgentID: "a", CreatedAt: now.Unix()}); err != nil {
			t.Fatal(err)
		}
		for id, status := range map[string]run.Status{"paused": run.StatusPaused, "done": run.StatusCompleted} {
			data := `{"run_id":"` + id + `","content":"c","requirements":` + reqs + `}`
			if _, err := d.UpsertRun(ctx, &db.Run{RunID: id, SessionID: "sess", RunType: run.TypeAgent, AgentID: "a", Status: status,
				RunData: []byte(data), CreatedAt: now.Unix()}); err != nil {
				t.Fatal(err)
			}
			if _, err := d.CreateScheduleRun(ctx, &db.ScheduleRun{ID: "sr-" + id, ScheduleID: sc.ID, Attempt: 1, TriggeredAt: now.Unix(),
				Status: db.ScheduleRunRunning, RunID: id, CreatedAt: now.Unix()}); err != nil {
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
		paused, err := d.GetScheduleRun(ctx, "sr-paused")
		if err != nil {
			t.Fatal(err)
		}
		if diff := jsontest.Diff([]byte(reqs), paused.Requirements); paused.Status != db.ScheduleRunPaused || diff != "" {
			t.Errorf("%s: paused firing %s with requirements %s: %s", name, paused.Status, paused.Requirements, diff)
		}
		done, err := d.GetScheduleRun(ctx, "sr-done")
		if err != nil {
			t.Fatal(err)
		}
		if done.Status != db.ScheduleRunSuccess || len(done.Requirements) != 0 {
			t.Errorf("%s: completed firing %s with requirements %s, want none", name, done.Status, done.Requirements)
		}
	}
}
