package agentos

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/schedule"
)

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// scheduledServer serves agent "echo" (scripted) with the durable queue and
// the scheduler on d, its clock clk.
func scheduledServer(t *testing.T, d *db.DB, clk *testClock, sc schedule.Config) (string, *Server) {
	t.Helper()
	return scheduledServerOf(t, d, clk, sc)
}

// scheduledServerOf is scheduledServer serving more agents beside echo.
func scheduledServerOf(t *testing.T, d *db.DB, clk *testClock, sc schedule.Config, more ...*agent.Agent) (string, *Server) {
	t.Helper()
	return scheduledServerQueue(t, d, clk, sc, queue.Config{}, more...)
}

// scheduledServerQueue is scheduledServerOf with the queue's config qc.
func scheduledServerQueue(t *testing.T, d *db.DB, clk *testClock, sc schedule.Config, qc queue.Config, more ...*agent.Agent) (string, *Server) {
	t.Helper()
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: scripted.Reply("scheduled hello"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	return scheduledServerWith(t, Config{Agents: append([]*agent.Agent{a}, more...)}, clk, sc, qc)
}

// scheduledServerWith serves cfg's components with a durable queue (qc,
// polling every 20 ms unless it says) and a scheduler (sc) on clk's
// clock that the test ticks by hand unless sc sets a poll interval; the
// server is closed when the test ends.
func scheduledServerWith(t *testing.T, cfg Config, clk *testClock, sc schedule.Config, qc queue.Config) (string, *Server) {
	t.Helper()
	if qc.PollInterval == 0 {
		qc.PollInterval = 20 * time.Millisecond
	}
	sc.Clock = clk.Now
	if sc.PollInterval == 0 {
		sc.PollInterval = time.Hour // the test ticks by hand
	}
	cfg.Queue, cfg.Schedules = &qc, &sc
	var srv *Server
	ts, _ := testServer(t, cfg, func(s *Server) { srv = s })
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	return ts.URL, srv
}

func jsonPost(t *testing.T, url, body string) response {
	t.Helper()
	return do(t, http.MethodPost, url, strings.NewReader(body), map[string]string{"Content-Type": "application/json"})
}

// createEveryMinute creates a schedule of echo every minute and returns it.
// Its retry_delay_seconds is 1: a fired run's queue attempt that fails
// (a database too slow to answer under the race detector on a loaded
// machine) is retried by the queue after the schedule's retry delay, and
// the default, 60 s, is as long as waitStatus waits: the run stayed
// RUNNING past it and the exactly-once tests failed.
func createEveryMinute(t *testing.T, u, name string) scheduleView {
	t.Helper()
	res := jsonPost(t, u+"/schedules", `{"name":"`+name+`","cron_expr":"* * * * *","endpoint":"/agents/echo/runs","retry_delay_seconds":1,`+
		`"payload":{"message":"tick"}}`)
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	return decode[scheduleView](t, res)
}

// tickAll ticks every scheduler at once, twice each (replicas racing).
// A database too slow to answer (db.ErrUnavailable: the race detector on
// a loaded machine) fails a poll, which the next poll repeats: the round
// is repeated at the same clock time, as the loop would.
func tickAll(t *testing.T, scheds []*schedule.Scheduler) {
	t.Helper()
	for round := 0; ; round++ {
		var wg sync.WaitGroup
		errs := make(chan error, 2*len(scheds))
		for _, s := range scheds {
			for range 2 {
				wg.Go(func() { errs <- s.Tick(context.Background()) })
			}
		}
		wg.Wait()
		close(errs)
		retry := false
		for err := range errs {
			switch {
			case err == nil:
			case errors.Is(err, db.ErrUnavailable) && round < 5:
				retry = true
			default:
				t.Errorf("tick: %v", err)
			}
		}
		if !retry {
			return
		}
	}
}

// checkExactlyOnce moves the clock across four due times of an
// every-minute schedule, ticking all schedulers at each, and checks one
// run per due time, each completed through the queue by the scripted
// model, and the schedule runs finished as success.
func checkExactlyOnce(t *testing.T, u string, d *db.DB, clk *testClock, scheds []*schedule.Scheduler) {
	t.Helper()
	start := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	clk.Set(start)
	sc := createEveryMinute(t, u, "every-minute")
	if sc.NextRunAt == nil || *sc.NextRunAt != start.Add(30*time.Second).Unix() {
		t.Fatalf("next_run_at = %v, want %d", sc.NextRunAt, start.Add(30*time.Second).Unix())
	}
	tickAll(t, scheds) // nothing due yet
	for i := 1; i <= 4; i++ {
		clk.Set(start.Add(time.Duration(i)*time.Minute + 5*time.Second))
		tickAll(t, scheds)
	}
	runs, total, err := d.ListScheduleRuns(context.Background(), db.ScheduleRunFilter{ScheduleID: sc.ID, Limit: 100, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	if total != 4 {
		t.Fatalf("%d schedule runs, want 4: %+v", total, runs)
	}
	var due []int64
	var runIDs []string
	for _, r := range runs {
		due = append(due, r.TriggeredAt)
		runIDs = append(runIDs, r.RunID)
	}
	slices.Sort(due)
	for i, at := range due {
		if want := start.Add(time.Duration(i+1)*time.Minute - 30*time.Second).Unix(); at != want {
			t.Errorf("firing %d at %d, want %d", i, at, want)
		}
	}
	stored, _, err := d.GetRuns(context.Background(), db.RunFilter{AgentID: "echo", Limit: 100, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 4 {
		t.Fatalf("%d runs stored, want 4 (one per due time)", len(stored))
	}
	for _, id := range runIDs {
		if id == "" || !slices.ContainsFunc(stored, func(r db.Run) bool { return r.RunID == id }) {
			t.Errorf("schedule run names run %q, which is not stored", id)
		}
		waitStatus(t, d, id, run.StatusCompleted)
	}
	tickAll(t, scheds)
	res := get(t, u+"/schedules/"+sc.ID+"/runs", nil)
	page := decode[paginated[scheduleRunView]](t, res)
	if res.status != 200 || page.Meta.TotalCount != 4 {
		t.Fatalf("runs route: %d %s", res.status, res.body)
	}
	for _, r := range page.Data {
		if r.Status != db.ScheduleRunSuccess || r.CompletedAt == nil || !strings.Contains(string(r.Output), "scheduled hello") {
			t.Errorf("schedule run %+v (output %s), want success with the run's content", r, r.Output)
		}
	}
	out, err := d.GetRun(context.Background(), runIDs[0])
	if err != nil || out.UserID != "" {
		t.Errorf("fired run = %+v, %v", out, err)
	}
}

// TestSchedules_FireExactlyOnceAcrossTwoReplicasOnPostgres: two servers
// (each with its queue and scheduler) on one Postgres database, one
// controlled clock, racing at every due time.
func TestSchedules_FireExactlyOnceAcrossTwoReplicasOnPostgres(t *testing.T) {
	t.Parallel()
	a, b := testdbs.AllTwins["postgres"](t)
	clk := &testClock{}
	u, sa := scheduledServer(t, a, clk, schedule.Config{})
	_, sb := scheduledServer(t, b, clk, schedule.Config{})
	checkExactlyOnce(t, u, a, clk, []*schedule.Scheduler{sa.Scheduler(), sb.Scheduler()})
}

// TestSchedules_FireExactlyOnceWithTwoSchedulersOnSQLite: one SQLite
// server (its file admits one process) with a second scheduler racing
// the server's own.
func TestSchedules_FireExactlyOnceWithTwoSchedulersOnSQLite(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	clk := &testClock{}
	u, srv := scheduledServer(t, d, clk, schedule.Config{})
	second, err := schedule.New(d, srv, schedule.Config{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, u, d, clk, []*schedule.Scheduler{srv.Scheduler(), second})
}

// TestSchedules_CatchUpAfterDowntime: ten due times pass while no
// scheduler runs; the policy decides what fires at the next poll.
func TestSchedules_CatchUpAfterDowntime(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		policy schedule.CatchUp
		want   int
	}{{schedule.CatchUpLatest, 1}, {schedule.CatchUpAll, 3}, {schedule.CatchUpSkip, 0}} {
		t.Run(string(c.policy), func(t *testing.T) {
			t.Parallel()
			d := testdbs.SQLite(t)
			clk := &testClock{}
			start := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
			clk.Set(start)
			u, srv := scheduledServer(t, d, clk, schedule.Config{CatchUp: c.policy, MaxCatchUp: 3, MisfireGrace: 5 * time.Second})
			sc := createEveryMinute(t, u, "catch-up")
			clk.Set(start.Add(10*time.Minute + 10*time.Second)) // 10 due times missed: 12:01 … 12:10
			if err := srv.Scheduler().Tick(context.Background()); err != nil {
				t.Fatal(err)
			}
			runs, n, err := d.ListScheduleRuns(context.Background(), db.ScheduleRunFilter{ScheduleID: sc.ID, Limit: 100, Page: 1})
			if err != nil {
				t.Fatal(err)
			}
			if n != c.want {
				t.Fatalf("%s fired %d times after downtime, want %d: %+v", c.policy, n, c.want, runs)
			}
			for _, r := range runs {
				if r.TriggeredAt < start.Add(7*time.Minute+30*time.Second).Unix() { // 12:08
					t.Errorf("%s fired the old due time %d; the most recent ones fire", c.policy, r.TriggeredAt)
				}
			}
			got, _ := d.GetSchedule(context.Background(), sc.ID)
			if want := start.Add(10*time.Minute + 30*time.Second).Unix(); got.NextRunAt != want {
				t.Errorf("next_run_at = %d, want %d (the first due time after now)", got.NextRunAt, want)
			}
			// Back to normal: the next due time fires once, whatever the policy.
			clk.Set(start.Add(10*time.Minute + 31*time.Second)) // 12:11:01
			if err := srv.Scheduler().Tick(context.Background()); err != nil {
				t.Fatal(err)
			}
			if _, n2, _ := d.ListScheduleRuns(context.Background(), db.ScheduleRunFilter{ScheduleID: sc.ID, Limit: 100, Page: 1}); n2 != c.want+1 {
				t.Errorf("after the next due time %d runs, want %d", n2, c.want+1)
			}
		})
	}
}

// TestSchedules_TriggerDisableEnableAndRuns: trigger now fires at once
// through the queue; a disabled schedule does not fire (and cannot be
// triggered); enabling re-arms from now without catching up.
func TestSchedules_TriggerDisableEnableAndRuns(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	clk := &testClock{}
	start := time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC)
	clk.Set(start)
	u, srv := scheduledServer(t, d, clk, schedule.Config{})
	sc := createEveryMinute(t, u, "triggered")
	// Stored before payload keys were checked: an unknown key does not stop
	// it firing.
	read, err := d.GetSchedule(context.Background(), sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored := *read
	stored.Payload = json.RawMessage(`{"message":"tick","extra_field":{"kept":true}}`)
	if _, err := d.EditSchedule(context.Background(), read, &stored); err != nil {
		t.Fatal(err)
	}
	res := jsonPost(t, u+"/schedules/"+sc.ID+"/trigger", "")
	if res.status != 200 {
		t.Fatalf("trigger: %d %s", res.status, res.body)
	}
	tr := decode[scheduleRunView](t, res)
	if tr.Status != db.ScheduleRunRunning || tr.RunID == nil || tr.ScheduleID != sc.ID || string(tr.Input) == "null" {
		t.Fatalf("trigger answered %s", res.body)
	}
	waitStatus(t, d, *tr.RunID, run.StatusCompleted)
	if err := srv.Scheduler().Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	res = get(t, u+"/schedules/"+sc.ID+"/runs/"+tr.ID, nil)
	if v := decode[scheduleRunView](t, res); res.status != 200 || v.Status != db.ScheduleRunSuccess {
		t.Fatalf("triggered run after it completed: %d %s", res.status, res.body)
	}
	if res := get(t, u+"/schedules/other-id/runs/"+tr.ID, nil); res.status != 404 {
		t.Errorf("run under another schedule id: %d %s", res.status, res.body)
	}

	res = jsonPost(t, u+"/schedules/"+sc.ID+"/disable", "")
	if v := decode[scheduleStateView](t, res); res.status != 200 || v.Enabled {
		t.Fatalf("disable: %d %s", res.status, res.body)
	}
	for i := 1; i <= 3; i++ {
		clk.Set(start.Add(time.Duration(i) * time.Minute))
		if err := srv.Scheduler().Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, n, _ := d.ListScheduleRuns(context.Background(), db.ScheduleRunFilter{ScheduleID: sc.ID, Limit: 100, Page: 1}); n != 1 {
		t.Errorf("a disabled schedule fired: %d runs, want the triggered one", n)
	}
	if res := jsonPost(t, u+"/schedules/"+sc.ID+"/trigger", ""); res.status != http.StatusConflict {
		t.Errorf("trigger of a disabled schedule: %d %s", res.status, res.body)
	}
	clk.Set(start.Add(3*time.Minute + 20*time.Second))
	res = jsonPost(t, u+"/schedules/"+sc.ID+"/enable", "")
	v := decode[scheduleStateView](t, res)
	if res.status != 200 || !v.Enabled || v.NextRunAt == nil || *v.NextRunAt != start.Add(4*time.Minute).Unix() {
		t.Fatalf("enable: %d %s", res.status, res.body)
	}
	if err := srv.Scheduler().Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	clk.Set(start.Add(4*time.Minute + time.Second))
	if err := srv.Scheduler().Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, n, _ := d.ListScheduleRuns(context.Background(), db.ScheduleRunFilter{ScheduleID: sc.ID, Limit: 100, Page: 1}); n != 2 {
		t.Errorf("after enable: %d runs, want 2 (no catch-up of the disabled minutes)", n)
	}
}

// TestSchedules_BadInputIsAClear4xx: invalid cron, unknown time zone,
// unknown agent, a non-run endpoint, missing message, a duplicate name
// per owner; nothing is stored by a refused request.
func TestSchedules_BadInputIsAClear4xx(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	clk := &testClock{}
	clk.Set(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	u, _ := scheduledServer(t, d, clk, schedule.Config{})
	createEveryMinute(t, u, "taken")
	body := func(fields string) string {
		return `{"name":"n","cron_expr":"0 9 * * 1-5","endpoint":"/agents/echo/runs","payload":{"message":"hi"}` + fields + `}`
	}
	for _, c := range []struct {
		name, body string
		status     int
		detail     string
	}{
		{"invalid cron", strings.Replace(body(""), "0 9 * * 1-5", "61 * * * *", 1), 422, "Invalid cron expression: 61 * * * *"},
		{"six fields", strings.Replace(body(""), "0 9 * * 1-5", "0 0 9 * * 1-5", 1), 422, "Invalid cron expression"},
		{"unknown timezone", body(`,"timezone":"Mars/Olympus"`), 422, "Invalid timezone: Mars/Olympus"},
		{"unknown agent", strings.Replace(body(""), "/agents/echo/runs", "/agents/nobody/runs", 1), 422, "Agent with ID nobody not found"},
		{"not a run endpoint", strings.Replace(body(""), "/agents/echo/runs", "/sessions", 1), 422, "run endpoints only"},
		{"GET a run endpoint", body(`,"method":"GET"`), 422, "run endpoints only"},
		{"no message", strings.Replace(body(""), `{"message":"hi"}`, `{"session_id":"s"}`, 1), 422, "payload.message is required"},
		{"too many retries", body(`,"max_retries":11`), 422, "max_retries must be from 0 to 10"},
		{"bad name", strings.Replace(body(""), `"n"`, `"-bad/name"`, 1), 422, "Name must start with alphanumeric"},
		{"duplicate name", strings.Replace(body(""), `"n"`, `"taken"`, 1), 409, "Schedule with name 'taken' already exists"},
		{"unknown field", body(`,"surprise":1`), 422, "unknown field"},
		{"unknown payload key", strings.Replace(body(""), `{"message":"hi"}`, `{"message":"hi","stream":false,"user_id":"u"}`, 1), 422,
			`payload key "stream", "user_id" is not supported`},
	} {
		res := jsonPost(t, u+"/schedules", c.body)
		if res.status != c.status || !strings.Contains(res.detail(t), c.detail) {
			t.Errorf("%s: %d %s, want %d with %q", c.name, res.status, res.body, c.status, c.detail)
		}
	}
	if _, n, _ := d.ListSchedules(context.Background(), db.ScheduleFilter{Limit: 100, Page: 1}); n != 1 {
		t.Errorf("%d schedules stored, want only the first", n)
	}
	// PATCH: rename onto a taken name, a bad cron; a good update recomputes next_run_at.
	other := createEveryMinute(t, u, "other")
	patch := func(body string) response {
		return do(t, http.MethodPatch, u+"/schedules/"+other.ID, strings.NewReader(body), map[string]string{"Content-Type": "application/json"})
	}
	if res := patch(`{"name":"taken"}`); res.status != 409 || !strings.Contains(res.detail(t), "'taken' already exists") {
		t.Errorf("rename onto a taken name: %d %s", res.status, res.body)
	}
	if res := patch(`{"cron_expr":"not cron"}`); res.status != 422 {
		t.Errorf("bad cron on patch: %d %s", res.status, res.body)
	}
	if res := patch(`{"payload":{"message":"hi","knowledge_filters":{"a":1}}}`); res.status != 422 || !strings.Contains(res.detail(t), `"knowledge_filters"`) {
		t.Errorf("unknown payload key on patch: %d %s", res.status, res.body)
	}
	// A schedule stored before payload keys were checked keeps its payload
	// through a PATCH that does not replace it.
	read, err := d.GetSchedule(context.Background(), other.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored := *read
	stored.Payload = json.RawMessage(`{"message":"tick","extra_field":{"kept":true}}`)
	if _, err := d.EditSchedule(context.Background(), read, &stored); err != nil {
		t.Fatal(err)
	}
	res := patch(`{"cron_expr":"30 7 * * *","timezone":"Europe/Paris","description":"morning"}`)
	v := decode[scheduleView](t, res)
	if want := time.Date(2026, 1, 1, 6, 30, 0, 0, time.UTC).Unix(); res.status != 200 || v.NextRunAt == nil || *v.NextRunAt != want ||
		v.Timezone != "Europe/Paris" || !strings.Contains(string(v.Payload), "extra_field") {
		t.Errorf("patch: %d %s, want next_run_at %d (07:30 Paris) and the payload kept", res.status, res.body, want)
	}
	if res := do(t, http.MethodDelete, u+"/schedules/"+other.ID, nil, nil); res.status != 204 {
		t.Errorf("delete: %d %s", res.status, res.body)
	}
	if res := get(t, u+"/schedules/"+other.ID, nil); res.status != 404 {
		t.Errorf("get after delete: %d %s", res.status, res.body)
	}
}

// TestSchedules_TriggerWithoutSchedulerIs503: the routes are served on a
// server without the scheduler; trigger says it is not running.
func TestSchedules_TriggerWithoutSchedulerIs503(t *testing.T) {
	t.Parallel()
	u, _, _ := durableServer(t, scripted.Reply("x"), queue.Config{}, Config{})
	sc := createEveryMinute(t, u, "no-scheduler")
	if res := jsonPost(t, u+"/schedules/"+sc.ID+"/trigger", ""); res.status != http.StatusServiceUnavailable || res.detail(t) != "Scheduler is not running" {
		t.Errorf("trigger: %d %s", res.status, res.body)
	}
	if _, err := New(Config{Schedules: &schedule.Config{}}); err == nil || !strings.Contains(err.Error(), "queue.durable") {
		t.Errorf("schedules without the durable queue: %v", err)
	}
}

// TestSchedules_UnfireableSchedulesFailVisibly: a stored schedule whose
// cron no longer parses is disabled with the reason; one whose agent is
// gone records a failed firing and moves on to its next due time.
func TestSchedules_UnfireableSchedulesFailVisibly(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	clk := &testClock{}
	start := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	clk.Set(start)
	_, srv := scheduledServer(t, d, clk, schedule.Config{})
	ctx := context.Background()
	for _, sc := range []db.Schedule{
		{ID: "bad-cron", Name: "bad-cron", CronExpr: "99 * * * *", Endpoint: "/agents/echo/runs"},
		{ID: "gone", Name: "gone", CronExpr: "* * * * *", Endpoint: "/agents/gone/runs"},
	} {
		sc.Method, sc.Timezone, sc.Enabled, sc.NextRunAt = "POST", "UTC", true, start.Unix()
		sc.Payload = []byte(`{"message":"x"}`)
		if _, err := d.CreateSchedule(ctx, &sc); err != nil {
			t.Fatal(err)
		}
	}
	clk.Set(start.Add(10 * time.Second))
	if err := srv.Scheduler().Tick(ctx); err == nil || !strings.Contains(err.Error(), "bad-cron") {
		t.Errorf("tick error = %v, want the bad schedule named", err)
	}
	if sc, _ := d.GetSchedule(ctx, "bad-cron"); sc.Enabled || !strings.Contains(sc.DisabledReason, "invalid_schedule") {
		t.Errorf("bad cron schedule = %+v, want disabled with the reason", sc)
	}
	runs, n, _ := d.ListScheduleRuns(ctx, db.ScheduleRunFilter{ScheduleID: "gone", Limit: 10, Page: 1})
	if n != 1 || runs[0].Status != db.ScheduleRunFailed || !strings.Contains(runs[0].Error, "gone not found") {
		t.Errorf("firing of a gone agent = %+v", runs)
	}
	if sc, _ := d.GetSchedule(ctx, "gone"); sc.NextRunAt != start.Add(time.Minute).Unix() {
		t.Errorf("gone schedule next_run_at = %d, want the next minute", sc.NextRunAt)
	}
}
