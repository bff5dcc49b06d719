package schedule_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
)

// TestTick_AFinishedFiringsOutputHasTheRunsContentType: a finished
// firing's output carries the run's content and content_type, the two
// members Agno's executor writes there (its output is {content,
// content_type}), so a reader of Agno's shape finds the output's type.
func TestTick_AFinishedFiringsOutputHasTheRunsContentType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdbs.SQLite(t)
	f := newFirings(t, d)
	f.running("sr-1", "run-1", run.StatusCompleted, `{"run_id":"run-1","content":{"title":"t"},"content_type":"Report"}`, f.now.Unix())
	f.tick()
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
