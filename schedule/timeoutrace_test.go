package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/schedule"
)

// finishingCanceller is a server whose run completed just before the
// scheduler's cancel reached it: the cancel finds the run over and does
// nothing (as the durable queue's cancel of a finished job).
type finishingCanceller struct {
	neverFirer
	d *db.DB
}

func (f finishingCanceller) CancelFired(ctx context.Context, _ *db.Schedule, runID string) error {
	r, err := f.d.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	r.Status, r.RunData = run.StatusCompleted, []byte(`{"run_id":"`+runID+`","content":"done in time"}`)
	_, err = f.d.UpsertRun(ctx, r)
	return err
}

// TestTick_ARunThatEndsAsItTimesOutIsNotFailedNorRetried: a firing's run
// that completes between the poll's read of it (running, past the
// schedule's timeout_seconds) and its cancel is a successful firing, not
// one failed as cancelled with a retry that would start the run a second
// time.
func TestTick_ARunThatEndsAsItTimesOutIsNotFailedNorRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdbs.SQLite(t)
	fired := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	sc, err := d.CreateSchedule(ctx, &db.Schedule{ID: "s1", Name: "nightly", Method: "POST", Endpoint: "/agents/a/runs",
		CronExpr: "0 3 * * *", Timezone: "UTC", Enabled: true, NextRunAt: fired.Add(time.Hour).Unix(), TimeoutSeconds: 60,
		MaxRetries: 2, CreatedAt: fired.Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "sess", SessionType: run.TypeAgent, AgentID: "a", CreatedAt: fired.Unix()}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertRun(ctx, &db.Run{RunID: "run-1", SessionID: "sess", RunType: run.TypeAgent, AgentID: "a",
		Status: run.StatusRunning, RunData: []byte(`{"run_id":"run-1"}`), CreatedAt: fired.Unix()}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateScheduleRun(ctx, &db.ScheduleRun{ID: "sr-1", ScheduleID: sc.ID, Attempt: 1, TriggeredAt: fired.Unix(),
		Status: db.ScheduleRunRunning, RunID: "run-1", CreatedAt: fired.Unix()}); err != nil {
		t.Fatal(err)
	}
	now := fired.Add(61 * time.Second)
	s, err := schedule.New(d, finishingCanceller{neverFirer{t}, d}, schedule.Config{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rows, _, err := d.ListScheduleRuns(ctx, db.ScheduleRunFilter{ScheduleID: sc.ID, Limit: 10, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Status != db.ScheduleRunSuccess {
		for _, r := range rows {
			t.Logf("schedule run %s attempt %d: %s %q", r.ID, r.Attempt, r.Status, r.Error)
		}
		t.Fatalf("%d schedule runs, want the one firing, successful", len(rows))
	}
}
