package agentos

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/schedule"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// provenanceStart is the time provenanceServer's clock starts at.
var provenanceStart = time.Date(2026, 8, 3, 9, 0, 0, 0, time.UTC)

// provenanceServer serves agents echo and other, team squad (of echo) and
// workflow flow (one step of echo) with the durable queue and the
// scheduler on a fresh SQLite database d, its clock clk (ticked by hand)
// set to provenanceStart.
func provenanceServer(t *testing.T) (d *db.DB, clk *testClock, url string, srv *Server) {
	t.Helper()
	d = testdbs.SQLite(t)
	clk = &testClock{}
	clk.Set(provenanceStart)
	echo, squad, flow := echoSquadFlow(t, d, "scheduled hello")
	other, err := agent.New(agent.Config{ID: "other", Name: "Other", Model: scripted.Reply("other hello"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	url, srv = scheduledServerWith(t, Config{Agents: []*agent.Agent{echo, other}, Teams: []*team.Team{squad}, Workflows: []*workflow.Workflow{flow}},
		clk, schedule.Config{}, queue.Config{})
	return d, clk, url, srv
}

func jsonPatch(t *testing.T, url, body string) response {
	t.Helper()
	return do(t, http.MethodPatch, url, strings.NewReader(body), map[string]string{"Content-Type": "application/json"})
}

// storeManaged stores an enabled every-minute schedule that a control
// plane (studio) manages, aimed at agent echo, with endpoint endpoint,
// due at due.
func storeManaged(t *testing.T, d *db.DB, id, endpoint string, due time.Time) {
	t.Helper()
	if _, err := d.CreateSchedule(context.Background(), &db.Schedule{ID: id, Name: id, Method: "POST", Endpoint: endpoint,
		Payload: json.RawMessage(`{"message":"tick"}`), CronExpr: "* * * * *", Timezone: "UTC", TimeoutSeconds: 3600, RetryDelaySeconds: 1,
		Enabled: true, NextRunAt: due.Unix(), ManagedBy: "studio", TargetType: "agent", TargetID: "echo"}); err != nil {
		t.Fatal(err)
	}
}

// TestSchedules_EnableRefusesAScheduleDisabledForEndpointDrift: a managed
// schedule the scheduler disabled because its endpoint no longer addresses
// its target is not re-armed by enable (409, Agno's detail) until the
// endpoint matches the target again; a drift reason on a row without a
// target is refused too (Agno fails closed). Re-armed, it would fail and
// be disabled again at its next due time.
func TestSchedules_EnableRefusesAScheduleDisabledForEndpointDrift(t *testing.T) {
	t.Parallel()
	d, clk, u, srv := provenanceServer(t)
	start := provenanceStart
	ctx := context.Background()
	storeManaged(t, d, "drifted", "/agents/other/runs", start)
	clk.Set(start.Add(10 * time.Second))
	if err := srv.Scheduler().Tick(ctx); err != nil {
		t.Fatal(err)
	}
	reason := "endpoint_drift:/agents/other/runs!=agent:echo"
	if sc, err := d.GetSchedule(ctx, "drifted"); err != nil || sc.Enabled || sc.DisabledReason != reason {
		t.Fatalf("after the drifted firing: %+v, %v; want disabled with %q", sc, err, reason)
	}

	res := jsonPost(t, u+"/schedules/drifted/enable", "")
	want := "Cannot enable schedule 'drifted': it was disabled because its endpoint no longer matches its target (" + reason +
		"). Repoint the endpoint back at the target first."
	if res.status != http.StatusConflict || res.detail(t) != want {
		t.Fatalf("enable of the drifted schedule: %d %s, want 409 %q", res.status, res.body, want)
	}
	if sc, _ := d.GetSchedule(ctx, "drifted"); sc.Enabled || sc.DisabledReason != reason {
		t.Fatalf("after the refused enable: enabled %v, disabled_reason %q", sc.Enabled, sc.DisabledReason)
	}

	// A drift reason on a row with no target to compare is refused.
	if _, err := d.CreateSchedule(ctx, &db.Schedule{ID: "untargeted", Name: "untargeted", Method: "POST", Endpoint: "/agents/echo/runs",
		Payload: json.RawMessage(`{"message":"tick"}`), CronExpr: "* * * * *", Timezone: "UTC", TimeoutSeconds: 3600, RetryDelaySeconds: 60,
		DisabledReason: "endpoint_drift:/agents/other/runs!=agent:echo"}); err != nil {
		t.Fatal(err)
	}
	if res := jsonPost(t, u+"/schedules/untargeted/enable", ""); res.status != http.StatusConflict {
		t.Errorf("enable of a drift-disabled row without a target: %d %s, want 409", res.status, res.body)
	}

	// Repointed at its target (the trailing slash Agno tolerates), it
	// enables, the reason retired, and fires its target.
	if res := jsonPatch(t, u+"/schedules/drifted", `{"endpoint":"/agents/echo/runs/"}`); res.status != 200 {
		t.Fatalf("repoint: %d %s", res.status, res.body)
	}
	res = jsonPost(t, u+"/schedules/drifted/enable", "")
	if v := decode[scheduleStateView](t, res); res.status != 200 || !v.Enabled {
		t.Fatalf("enable after the repoint: %d %s", res.status, res.body)
	}
	if sc, _ := d.GetSchedule(ctx, "drifted"); !sc.Enabled || sc.DisabledReason != "" {
		t.Fatalf("after the enable: enabled %v, disabled_reason %q", sc.Enabled, sc.DisabledReason)
	}
}

// TestSchedules_PatchOfEndpointKeepsTheProvenance: as Agno 3.0's generic
// update, PATCH writes the endpoint and never target_type/target_id: a
// managed schedule repointed away from its target keeps its target, so
// the scheduler refuses it (endpoint drift) instead of running a component
// its provenance does not name. A schedule created through the route has
// no provenance (Agno's create writes none), before and after a PATCH.
func TestSchedules_PatchOfEndpointKeepsTheProvenance(t *testing.T) {
	t.Parallel()
	d, clk, u, srv := provenanceServer(t)
	start := provenanceStart
	ctx := context.Background()

	storeManaged(t, d, "managed", "/agents/echo/runs", start.Add(time.Minute))
	res := jsonPatch(t, u+"/schedules/managed", `{"endpoint":"/agents/other/runs"}`)
	v := decode[scheduleView](t, res)
	if res.status != 200 || v.Endpoint != "/agents/other/runs" || v.ManagedBy == nil || *v.ManagedBy != "studio" ||
		v.TargetType == nil || *v.TargetType != "agent" || v.TargetID == nil || *v.TargetID != "echo" {
		t.Fatalf("PATCH of a managed schedule's endpoint: %d %s; want the endpoint changed and the target agent:echo kept", res.status, res.body)
	}
	clk.Set(start.Add(time.Minute + 10*time.Second))
	if err := srv.Scheduler().Tick(ctx); err != nil {
		t.Fatal(err)
	}
	sc, err := d.GetSchedule(ctx, "managed")
	if err != nil || sc.Enabled || sc.DisabledReason != "endpoint_drift:/agents/other/runs!=agent:echo" {
		t.Fatalf("the repointed managed schedule at its due time: %+v, %v; want it disabled for endpoint drift", sc, err)
	}
	runs := scheduleRuns(t, d, "managed")
	if len(runs) != 1 || runs[0].Status != db.ScheduleRunFailed || runs[0].RunID != "" {
		t.Fatalf("firings of the repointed managed schedule: %+v; want one failed firing that ran nothing", runs)
	}

	res = jsonPost(t, u+"/schedules", `{"name":"plain","cron_expr":"0 9 * * *","endpoint":"/agents/echo/runs","payload":{"message":"tick"}}`)
	if v := decode[scheduleView](t, res); res.status != http.StatusCreated || v.ManagedBy != nil || v.TargetType != nil || v.TargetID != nil {
		t.Fatalf("create: %d %s; want no provenance", res.status, res.body)
	}
	id := decode[scheduleView](t, res).ID
	res = jsonPatch(t, u+"/schedules/"+id, `{"endpoint":"/agents/other/runs"}`)
	if v := decode[scheduleView](t, res); res.status != 200 || v.Endpoint != "/agents/other/runs" || v.TargetType != nil || v.TargetID != nil {
		t.Fatalf("PATCH of an unmanaged schedule's endpoint: %d %s; want the endpoint changed, still no provenance", res.status, res.body)
	}
}

// TestSchedules_ScheduleRunInputIsTheRunsInput: a schedule run records as
// its input the fired run's input as the run stores it when that is an
// object (an agent's or team's RunInput, {"input_content": …}), and null
// for a workflow (whose stored input is the bare value), as Agno's
// executor records the input of the run it polled; not the schedule's
// payload. A row stored with the payload (older Agentry) still reads.
func TestSchedules_ScheduleRunInputIsTheRunsInput(t *testing.T) {
	t.Parallel()
	d, _, u, _ := provenanceServer(t)
	ctx := context.Background()
	var firstID string
	for _, c := range []struct{ kind, id, want string }{
		{"agents", "echo", `{"input_content":"tick"}`},
		{"teams", "squad", `{"input_content":"tick"}`},
		{"workflows", "flow", `null`},
	} {
		res := jsonPost(t, u+"/schedules", `{"name":"`+c.id+`","cron_expr":"0 9 * * *","endpoint":"/`+c.kind+`/`+c.id+`/runs",`+
			`"payload":{"message":"tick","metadata":{"k":"v"}}}`)
		if res.status != http.StatusCreated {
			t.Fatalf("create %s: %d %s", c.id, res.status, res.body)
		}
		sc := decode[scheduleView](t, res)
		if firstID == "" {
			firstID = sc.ID
		}
		res = jsonPost(t, u+"/schedules/"+sc.ID+"/trigger", "")
		tr := decode[scheduleRunView](t, res)
		if res.status != 200 || tr.RunID == nil || compactJSON(t, tr.Input) != c.want {
			t.Fatalf("trigger of %s: %d %s; want input %s", c.id, res.status, res.body, c.want)
		}
		stored, err := d.GetScheduleRun(ctx, tr.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got := compactJSON(t, stored.Input); got != c.want && !(c.want == "null" && len(stored.Input) == 0) {
			t.Errorf("%s: stored input %s, want %s", c.id, stored.Input, c.want)
		}
		waitStatus(t, d, *tr.RunID, run.StatusCompleted)
		if c.kind != "workflows" {
			// The very value a poll of the run answers (what Agno copies).
			res = get(t, u+"/"+c.kind+"/"+c.id+"/runs/"+*tr.RunID+"?session_id="+*tr.SessionID, nil)
			var polled struct {
				Input json.RawMessage `json:"input"`
			}
			if err := json.Unmarshal([]byte(res.body), &polled); res.status != 200 || err != nil || compactJSON(t, polled.Input) != c.want {
				t.Errorf("%s: the run's input as polled: %d %s", c.id, res.status, res.body)
			}
		}
	}

	// An older row, with the payload as its input, reads as stored.
	older := `{"message":"tick","session_id":"s1"}`
	if _, err := d.CreateScheduleRun(ctx, &db.ScheduleRun{ID: "older", ScheduleID: firstID, Status: db.ScheduleRunSuccess,
		Input: json.RawMessage(older), TriggeredAt: 1, CreatedAt: 1}); err != nil {
		t.Fatal(err)
	}
	res := get(t, u+"/schedules/"+firstID+"/runs/older", nil)
	if v := decode[scheduleRunView](t, res); res.status != 200 || compactJSON(t, v.Input) != older {
		t.Errorf("an older schedule run: %d %s, want its input %s", res.status, res.body, older)
	}
}

// compactJSON is raw compacted ("null" for none).
func compactJSON(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	if len(raw) == 0 {
		return "null"
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
