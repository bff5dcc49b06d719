package agentos

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/schedule"
)

// failing is a model that fails (the run ends ERROR) while fail is set
// and answers otherwise; the test flips it, so a queue-level retry of an
// attempt (a slow database under load) does not shift which attempt
// succeeds.
type failing struct {
	fail atomic.Bool
	ok   *scripted.Model
}

func newFailing(answer string) *failing {
	m := &failing{ok: scripted.Reply(answer)}
	m.fail.Store(true)
	return m
}

func (m *failing) Info() model.Info { return m.ok.Info() }

func (m *failing) err() error {
	if m.fail.Load() {
		return fmt.Errorf("%w: refused", model.ErrBadRequest)
	}
	return nil
}

func (m *failing) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := m.err(); err != nil {
		return nil, err
	}
	return m.ok.Invoke(ctx, req)
}

func (m *failing) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	if err := m.err(); err != nil {
		return func(yield func(*model.Chunk, error) bool) { yield(nil, err) }
	}
	return m.ok.Stream(ctx, req)
}

// scheduleRuns lists schedule id's runs, oldest attempt first.
func scheduleRuns(t *testing.T, d *db.DB, id string) []db.ScheduleRun {
	t.Helper()
	runs, _, err := d.ListScheduleRuns(context.Background(), db.ScheduleRunFilter{ScheduleID: id, Limit: 100, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(runs, func(a, b db.ScheduleRun) int { return int(a.Attempt - b.Attempt) })
	return runs
}

// settle waits until every schedule run of id that names a run has its run
// final, then ticks all schedulers so that they record the outcome.
func settle(t *testing.T, d *db.DB, id string, scheds []*schedule.Scheduler) {
	t.Helper()
	for _, r := range scheduleRuns(t, d, id) {
		if r.RunID != "" && r.Status == db.ScheduleRunRunning {
			deadline := time.Now().Add(60 * time.Second)
			for st := storedStatus(d, r.RunID); st != run.StatusError && st != run.StatusCompleted; st = storedStatus(d, r.RunID) {
				if time.Now().After(deadline) {
					t.Fatalf("run %s of attempt %d is %s after 60 s", r.RunID, r.Attempt, st)
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	tickAll(t, scheds)
}

// checkRetries: a schedule with max_retries 2 and retry_delay_seconds 30
// whose agent fails twice, then (the test lets it) answers: the firing's run fails, a second
// attempt fires 30 s (the schedulers' clock) after the failure was seen,
// fails, and a third succeeds; each attempt is its own schedule run row
// and run, started once across the racing schedulers, with the
// idempotency key of (schedule, due time, attempt). A schedule whose
// retries run out stops at max_retries + 1 attempts.
func checkRetries(t *testing.T, u string, d *db.DB, clk *testClock, scheds []*schedule.Scheduler, m retryModels) {
	t.Helper()
	start := time.Date(2026, 2, 1, 9, 0, 30, 0, time.UTC)
	clk.Set(start)
	res := jsonPost(t, u+"/schedules", `{"name":"flaky","cron_expr":"0 * * * *","endpoint":"/agents/flaky/runs",`+
		`"max_retries":2,"retry_delay_seconds":30,"payload":{"message":"try"}}`)
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	sc := decode[scheduleView](t, res)
	if sc.MaxRetries != 2 || sc.RetryDelaySeconds != 30 {
		t.Fatalf("created %s", res.body)
	}
	res = jsonPost(t, u+"/schedules", `{"name":"hopeless","cron_expr":"0 * * * *","endpoint":"/agents/hopeless/runs",`+
		`"max_retries":1,"retry_delay_seconds":10,"payload":{"message":"try"}}`)
	if res.status != http.StatusCreated {
		t.Fatalf("create: %d %s", res.status, res.body)
	}
	hopeless := decode[scheduleView](t, res)
	due := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)

	clk.Set(due.Add(5 * time.Second))
	tickAll(t, scheds) // attempt 1 fires
	// (attempt 1's run may fail fast enough for this round to see it)
	if runs := scheduleRuns(t, d, sc.ID); len(runs) == 0 || len(runs) > 2 || runs[0].Attempt != 1 || runs[0].RunID == "" {
		t.Fatalf("after the due time: %+v, want attempt 1 fired", runs)
	}
	clk.Set(due.Add(10 * time.Second))
	settle(t, d, sc.ID, scheds) // attempt 1 failed: attempt 2 is recorded, not started
	settle(t, d, hopeless.ID, scheds)
	runs := scheduleRuns(t, d, sc.ID)
	if len(runs) != 2 || runs[0].Status != db.ScheduleRunFailed || runs[1].Attempt != 2 || runs[1].RunID != "" ||
		runs[1].Status != db.ScheduleRunRunning || runs[1].TriggeredAt != due.Unix() {
		t.Fatalf("after attempt 1 failed: %+v, want it failed and attempt 2 waiting (no run yet) for due time %d", runs, due.Unix())
	}
	seenAt := time.Unix(runs[1].CreatedAt, 0) // when attempt 1's failure was seen
	if seenAt.Before(due.Add(5*time.Second)) || seenAt.After(due.Add(10*time.Second)) {
		t.Fatalf("attempt 2 recorded at %s, want when attempt 1's failure was seen", seenAt)
	}
	clk.Set(seenAt.Add(29 * time.Second))
	tickAll(t, scheds)
	if runs := scheduleRuns(t, d, sc.ID); len(runs) != 2 || runs[1].RunID != "" {
		t.Fatalf("attempt 2 before its retry delay: %+v, want it waiting", runs)
	}
	clk.Set(seenAt.Add(31 * time.Second))
	tickAll(t, scheds) // attempt 2 fires
	// (as with attempt 1, its run may fail before the round's last
	// scheduler ticks, which then records attempt 3, waiting)
	if runs := scheduleRuns(t, d, sc.ID); len(runs) < 2 || len(runs) > 3 || runs[1].RunID == "" || runs[1].RunID == runs[0].RunID ||
		(len(runs) == 3 && (runs[1].Status != db.ScheduleRunFailed || runs[2].Attempt != 3 || runs[2].RunID != "")) {
		t.Fatalf("attempt 2 after its retry delay: %+v, want its own run", runs)
	}
	settle(t, d, sc.ID, scheds) // attempt 2 failed: attempt 3 recorded
	m.flaky.fail.Store(false)
	clk.Set(seenAt.Add(75 * time.Second))
	tickAll(t, scheds) // attempt 3 fires
	settle(t, d, sc.ID, scheds)
	clk.Set(due.Add(200 * time.Second))
	tickAll(t, scheds) // nothing more: attempt 3 succeeded
	runs = scheduleRuns(t, d, sc.ID)
	if len(runs) != 3 {
		t.Fatalf("%d schedule runs, want 3 attempts: %+v", len(runs), runs)
	}
	seen := map[string]bool{}
	for i, r := range runs {
		want := db.ScheduleRunFailed
		if i == 2 {
			want = db.ScheduleRunSuccess
		}
		if r.Attempt != int64(i+1) || r.Status != want || r.TriggeredAt != due.Unix() || r.RunID == "" || seen[r.RunID] {
			t.Errorf("attempt %d: %+v, want attempt %d %s of due time %d with its own run", i+1, r, i+1, want, due.Unix())
		}
		seen[r.RunID] = true
		key := schedule.Key(sc.ID, due)
		if i > 0 {
			key = schedule.RetryKey(sc.ID, due, r.Attempt)
		}
		job := decode[queue.Job](t, get(t, u+"/queue/jobs/"+r.RunID, nil))
		if job.IdempotencyKey != key {
			t.Errorf("attempt %d's job key %q, want %q", i+1, job.IdempotencyKey, key)
		}
	}
	if !strings.HasSuffix(schedule.RetryKey(sc.ID, due, 2), "#2") {
		t.Errorf("retry key %q does not name the attempt", schedule.RetryKey(sc.ID, due, 2))
	}
	if n := countRuns(t, d, db.RunFilter{AgentID: "flaky", Limit: 100, Page: 1}); n != 3 {
		t.Errorf("%d runs of flaky stored, want 3 (one per attempt)", n)
	}

	// hopeless: max_retries 1, always failing: two attempts, both failed.
	clk.Set(due.Add(300 * time.Second))
	tickAll(t, scheds)
	settle(t, d, hopeless.ID, scheds)
	clk.Set(due.Add(400 * time.Second))
	tickAll(t, scheds)
	settle(t, d, hopeless.ID, scheds)
	h := scheduleRuns(t, d, hopeless.ID)
	if len(h) != 2 || h[0].Status != db.ScheduleRunFailed || h[1].Status != db.ScheduleRunFailed || h[1].Attempt != 2 {
		t.Fatalf("hopeless: %+v, want two failed attempts", h)
	}
}

// retryModels are the models of the agents checkRetries schedules: flaky
// fails until the test lets it answer, hopeless always fails. Replicas share them,
// since any replica's worker may run an attempt.
type retryModels struct{ flaky, hopeless *failing }

func newRetryModels() retryModels {
	return retryModels{flaky: newFailing("third time"), hopeless: newFailing("never")}
}

// agents are flaky and hopeless on d.
func (m retryModels) agents(t *testing.T, d *db.DB) []*agent.Agent {
	t.Helper()
	flaky, err := agent.New(agent.Config{ID: "flaky", Name: "Flaky", DB: d, Model: m.flaky})
	if err != nil {
		t.Fatal(err)
	}
	hopeless, err := agent.New(agent.Config{ID: "hopeless", Name: "Hopeless", DB: d, Model: m.hopeless})
	if err != nil {
		t.Fatal(err)
	}
	return []*agent.Agent{flaky, hopeless}
}

// TestSchedules_MaxRetriesRefiresAFailedFiringOnceAcrossReplicas: two
// servers on one Postgres database with one clock.
func TestSchedules_MaxRetriesRefiresAFailedFiringOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	a, b := testdbs.AllTwins["postgres"](t)
	clk := &testClock{}
	m := newRetryModels()
	u, sa := scheduledServerOf(t, a, clk, schedule.Config{}, m.agents(t, a)...)
	_, sb := scheduledServerOf(t, b, clk, schedule.Config{}, m.agents(t, b)...)
	checkRetries(t, u, a, clk, []*schedule.Scheduler{sa.Scheduler(), sb.Scheduler()}, m)
}

// TestSchedules_MaxRetriesRefiresAFailedFiringOnSQLite: one SQLite server
// with a second scheduler racing its own.
func TestSchedules_MaxRetriesRefiresAFailedFiringOnSQLite(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	clk := &testClock{}
	m := newRetryModels()
	u, srv := scheduledServerOf(t, d, clk, schedule.Config{}, m.agents(t, d)...)
	second, err := schedule.New(d, srv, schedule.Config{Clock: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	checkRetries(t, u, d, clk, []*schedule.Scheduler{srv.Scheduler(), second}, m)
}
