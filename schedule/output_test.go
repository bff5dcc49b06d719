package schedule_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/schedule"
)

// TestTick_AFinishedFiringsOutputHasTheRunsContentType: a finished
// firing's output carries the run's content and content_type, the two
// members Agno's executor writes there (its output is {content,
// content_type}), so a reader of Agno's shape finds the output's type.
func TestTick_AFinishedFiringsOutputHasTheRunsContentType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdbs.SQLite(t)
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	sc, err := d.CreateSchedule(ctx, &db.Schedule{ID: "s1", Name: "nightly", Method: "POST", Endpoint: "/agents/a/runs",
		CronExpr: "0 3 * * *", Timezone: "UTC", Enabled: true, NextRunAt: now.Add(time.Hour).Unix(), CreatedAt: now.Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "sess", SessionType: run.TypeAgent, AgentID: "a", CreatedAt: now.Unix()}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertRun(ctx, &db.Run{RunID: "run-1", SessionID: "sess", RunType: run.TypeAgent, AgentID: "a", Status: run.StatusCompleted,
		RunData: []byte(`{"run_id":"run-1","content":{"title":"t"},"content_type":"Report"}`), CreatedAt: now.Unix()}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.CreateScheduleRun(ctx, &db.ScheduleRun{ID: "sr-1", ScheduleID: sc.ID, Attempt: 1, TriggeredAt: now.Unix(),
		Status: db.ScheduleRunRunning, RunID: "run-1", CreatedAt: now.Unix()}); err != nil {
		t.Fatal(err)
	}
	s, err := schedule.New(d, neverFirer{t}, schedule.Config{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := d.GetScheduleRun(ctx, "sr-1")
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Content     map[string]any `json:"content"`
		ContentType string         `json:"content_type"`
	}
	if err := json.Unmarshal(r.Output, &out); err != nil || r.Status != db.ScheduleRunSuccess || out.Content["title"] != "t" || out.ContentType != "Report" {
		t.Fatalf("firing %s with output %s (%v), want success with the content and content_type Report", r.Status, r.Output, err)
	}
}
