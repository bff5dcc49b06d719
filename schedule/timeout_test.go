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

// TestTick_ARunCancelledPastItsTimeoutFailsTheFiring: a poll that finds a
// firing's run CANCELLED after the schedule's timeout_seconds fails the
// firing with the timeout, as the poll that cancelled it does: the cancel
// of a timed-out run could be seen by another scheduler's poll (or the
// server's own loop beside a tick) before the canceller recorded the
// failure, and the firing ended "cancelled" (CI, agentos
// TestSchedules_TimeoutCancelsTheRunAndFailsTheFiring). A run cancelled
// within the timeout is a cancelled firing.
func TestTick_ARunCancelledPastItsTimeoutFailsTheFiring(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdbs.SQLite(t)
	fired := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	sc, err := d.CreateSchedule(ctx, &db.Schedule{ID: "s1", Name: "nightly", Method: "POST", Endpoint: "/agents/a/runs",
		CronExpr: "0 3 * * *", Timezone: "UTC", Enabled: true, NextRunAt: fired.Add(time.Hour).Unix(), TimeoutSeconds: 60, CreatedAt: fired.Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "sess", SessionType: run.TypeAgent, AgentID: "a", CreatedAt: fired.Unix()}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"late", "early"} {
		if _, err := d.UpsertRun(ctx, &db.Run{RunID: "run-" + id, SessionID: "sess", RunType: run.TypeAgent, AgentID: "a",
			Status: run.StatusCancelled, RunData: []byte(`{"run_id":"run-` + id + `","content":"cancelled"}`), CreatedAt: fired.Unix()}); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(id string, created time.Time) {
		if _, err := d.CreateScheduleRun(ctx, &db.ScheduleRun{ID: "sr-" + id, ScheduleID: sc.ID, Attempt: 1,
			TriggeredAt: created.Unix(), Status: db.ScheduleRunRunning, RunID: "run-" + id, CreatedAt: created.Unix()}); err != nil {
			t.Fatal(err)
		}
	}
	now := fired.Add(61 * time.Second)
	mk("late", fired)                     // 61 s old: past its 60 s
	mk("early", now.Add(-30*time.Second)) // 30 s old: cancelled by someone, within its timeout
	s, err := schedule.New(d, neverFirer{t}, schedule.Config{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	got := func(id string) *db.ScheduleRun {
		r, err := d.GetScheduleRun(ctx, "sr-"+id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := got("late"); r.Status != db.ScheduleRunFailed || !strings.Contains(r.Error, "timeout_seconds (60 s)") {
		t.Errorf("firing whose run was cancelled past its timeout: %s %q, want failed with the timeout", r.Status, r.Error)
	}
	if r := got("early"); r.Status != db.ScheduleRunCancelled {
		t.Errorf("firing whose run was cancelled within its timeout: %s %q, want cancelled", r.Status, r.Error)
	}
}
