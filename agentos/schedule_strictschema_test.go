package agentos

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/schedule"
)

// TestSchedules_OutputSchemaTheAgentCannotUseFailsTheFiring: a schedule
// whose payload has an output_schema with no strict form, for an agent with
// StrictOutput, fired a run that the agent then failed (stored as an
// error, and fired again at every retry and due time) although firing
// again cannot fix it; the run route refuses the same schema with 422
// (checkRunOverrides). The firing fails as for a schema that is not one
// (checkOutputSchema), naming what is wrong, and stores no run.
func TestSchedules_OutputSchemaTheAgentCannotUseFailsTheFiring(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	clk := &testClock{}
	start := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	clk.Set(start)
	strict, err := agent.New(agent.Config{ID: "strict", Model: scripted.Reply(`{"a":"x"}`), DB: d, StrictOutput: true})
	if err != nil {
		t.Fatal(err)
	}
	_, srv := scheduledServerOf(t, d, clk, schedule.Config{}, strict)
	ctx := context.Background()
	sc := db.Schedule{ID: "map-schema", Name: "map-schema", CronExpr: "* * * * *", Endpoint: "/agents/strict/runs",
		Method: "POST", Timezone: "UTC", Enabled: true, NextRunAt: start.Unix(), MaxRetries: 2, RetryDelaySeconds: 1,
		Payload: []byte(`{"message":"x","output_schema":{"type":"object","additionalProperties":{"type":"string"}}}`)}
	if _, err := d.CreateSchedule(ctx, &sc); err != nil {
		t.Fatal(err)
	}
	clk.Set(start.Add(10 * time.Second))
	if err := srv.Scheduler().Tick(ctx); err != nil {
		t.Fatal(err)
	}
	runs, n, err := d.ListScheduleRuns(ctx, db.ScheduleRunFilter{ScheduleID: sc.ID, Limit: 10, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 || runs[0].Status != db.ScheduleRunFailed || !strings.Contains(runs[0].Error, "no strict form") || runs[0].RunID != "" {
		t.Errorf("firing with a schema the agent cannot use = %+v", runs)
	}
	if got, _, err := d.GetRuns(ctx, db.RunFilter{Limit: 10, Page: 1}); err != nil || len(got) != 0 {
		t.Errorf("the firing stored %d runs (%v), want none", len(got), err)
	}
}
