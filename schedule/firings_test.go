package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/schedule"
)

// firings is a schedule (s1, never due at now) and a session (sess) on d,
// with running firings of runs the test stores, reconciled by tick.
type firings struct {
	t   *testing.T
	d   *db.DB
	sc  *db.Schedule
	now time.Time
}

func newFirings(t *testing.T, d *db.DB) *firings {
	t.Helper()
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
	return &firings{t: t, d: d, sc: sc, now: now}
}

// running stores run runID (status, run_data) and the running firing id
// of it, created createdAt.
func (f *firings) running(id, runID string, status run.Status, runData string, createdAt int64) {
	f.t.Helper()
	ctx := context.Background()
	if _, err := f.d.UpsertRun(ctx, &db.Run{RunID: runID, SessionID: "sess", RunType: run.TypeAgent, AgentID: "a", Status: status,
		RunData: []byte(runData), CreatedAt: f.now.Unix()}); err != nil {
		f.t.Fatal(err)
	}
	if _, err := f.d.CreateScheduleRun(ctx, &db.ScheduleRun{ID: id, ScheduleID: f.sc.ID, Attempt: 1, TriggeredAt: f.now.Unix(),
		Status: db.ScheduleRunRunning, RunID: runID, CreatedAt: createdAt}); err != nil {
		f.t.Fatal(err)
	}
}

// tick runs one tick of a scheduler at now that fires nothing.
func (f *firings) tick() {
	f.t.Helper()
	s, err := schedule.New(f.d, neverFirer{f.t}, schedule.Config{Clock: func() time.Time { return f.now }})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := s.Tick(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}
