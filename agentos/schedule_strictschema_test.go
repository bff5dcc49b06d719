package agentos

import (
	"context"
	"fmt"
	"net/http"
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

// TestSchedules_CreateAndPatchRefuseAnOutputSchemaTheTargetCannotUse: a
// schedule was stored with an output_schema that is not a JSON Schema, or
// one the target cannot use (no strict form for a StrictOutput agent),
// and only its firings failed; create and patch answer 422 as the run
// route does, also when a patch moves a payload onto such a target.
func TestSchedules_CreateAndPatchRefuseAnOutputSchemaTheTargetCannotUse(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	clk := &testClock{}
	clk.Set(time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC))
	strict, err := agent.New(agent.Config{ID: "strict", Model: scripted.Reply(`{"a":"x"}`), DB: d, StrictOutput: true})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := scheduledServerOf(t, d, clk, schedule.Config{}, strict)
	const mapSchema = `{"type":"object","additionalProperties":{"type":"string"}}`
	body := func(endpoint, schema string) string {
		return `{"name":"s` + fmt.Sprint(time.Now().UnixNano()) + `","cron_expr":"* * * * *","endpoint":"` + endpoint +
			`","payload":{"message":"x","output_schema":` + schema + `}}`
	}
	for _, c := range []struct{ name, body, detail string }{
		{"not a schema", body("/agents/echo/runs", `{"type":5}`), "output_schema is not a JSON Schema"},
		{"no strict form", body("/agents/strict/runs", mapSchema), "no strict form"},
	} {
		if res := jsonPost(t, u+"/schedules", c.body); res.status != 422 || !strings.Contains(res.detail(t), c.detail) {
			t.Errorf("create, %s: %d %s, want 422 with %q", c.name, res.status, res.body, c.detail)
		}
	}
	res := jsonPost(t, u+"/schedules", body("/agents/echo/runs", mapSchema))
	if res.status != http.StatusCreated {
		t.Fatalf("create with a schema echo can use: %d %s", res.status, res.body)
	}
	sc := decode[scheduleView](t, res)
	patch := func(body string) response {
		return do(t, http.MethodPatch, u+"/schedules/"+sc.ID, strings.NewReader(body), map[string]string{"Content-Type": "application/json"})
	}
	if res := patch(`{"endpoint":"/agents/strict/runs"}`); res.status != 422 || !strings.Contains(res.detail(t), "no strict form") {
		t.Errorf("patch moving the payload onto the strict agent: %d %s", res.status, res.body)
	}
	if res := patch(`{"payload":{"message":"x","output_schema":{"type":5}}}`); res.status != 422 || !strings.Contains(res.detail(t), "not a JSON Schema") {
		t.Errorf("patch with a payload whose schema is not one: %d %s", res.status, res.body)
	}
	read, err := d.GetSchedule(context.Background(), sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if read.Endpoint != "/agents/echo/runs" || !strings.Contains(string(read.Payload), `"additionalProperties"`) {
		t.Errorf("refused patches changed the schedule: %s %s", read.Endpoint, read.Payload)
	}
	if res := patch(`{"endpoint":"/agents/strict/runs","payload":{"message":"x","output_schema":{"type":"object","properties":{"a":{"type":"string"}}}}}`); res.status != 200 {
		t.Errorf("patch onto the strict agent with a schema it can use: %d %s", res.status, res.body)
	}
}
