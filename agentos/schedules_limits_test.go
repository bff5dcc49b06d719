package agentos

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/schedule"
)

// scheduleDrivers are the databases schedules fire on.
var scheduleDrivers = sqliteAndPostgres

// onlyScheduleRun returns the one run of schedule id.
func onlyScheduleRun(t *testing.T, d *db.DB, id string) db.ScheduleRun {
	t.Helper()
	runs, total, err := d.ListScheduleRuns(context.Background(), db.ScheduleRunFilter{ScheduleID: id, Limit: 10, Page: 1})
	if err != nil || total != 1 {
		t.Fatalf("schedule runs: %+v (%d), %v; want one", runs, total, err)
	}
	return runs[0]
}

// TestSchedules_TimeoutCancelsTheRunAndFailsTheFiring: a firing whose run
// is still going timeout_seconds after it fired (the scheduler's clock) is
// cancelled, and its schedule run fails with the reason; before that it is
// left running.
func TestSchedules_TimeoutCancelsTheRunAndFailsTheFiring(t *testing.T) {
	for name, open := range scheduleDrivers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			slow, err := agent.New(agent.Config{ID: "slow", Name: "Slow", DB: d,
				Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{Content: "too late"}}, Latency: time.Hour})})
			if err != nil {
				t.Fatal(err)
			}
			clk := &testClock{}
			start := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
			clk.Set(start)
			u, srv := scheduledServerOf(t, d, clk, schedule.Config{}, slow)
			res := jsonPost(t, u+"/schedules", `{"name":"slow","cron_expr":"*/10 * * * *","endpoint":"/agents/slow/runs",`+
				`"timeout_seconds":60,"payload":{"message":"take your time"}}`)
			if res.status != http.StatusCreated {
				t.Fatalf("create: %d %s", res.status, res.body)
			}
			sc := decode[scheduleView](t, res)
			sched := srv.Scheduler()
			fired := start.Add(9*time.Minute + 35*time.Second) // 00:10:05, due 00:10:00
			clk.Set(fired)
			tickAll(t, []*schedule.Scheduler{sched})
			sr := onlyScheduleRun(t, d, sc.ID)
			waitStatus(t, d, sr.RunID, run.StatusRunning)

			clk.Set(fired.Add(59 * time.Second)) // within the timeout
			tickAll(t, []*schedule.Scheduler{sched})
			if got := onlyScheduleRun(t, d, sc.ID); got.Status != db.ScheduleRunRunning {
				t.Fatalf("schedule run %+v before its timeout, want running", got)
			}
			if st := storedStatus(d, sr.RunID); st != run.StatusRunning {
				t.Fatalf("run is %s before the timeout, want RUNNING", st)
			}
			clk.Set(fired.Add(61 * time.Second))
			tickAll(t, []*schedule.Scheduler{sched})
			got := onlyScheduleRun(t, d, sc.ID)
			if got.Status != db.ScheduleRunFailed || !strings.Contains(got.Error, "timeout_seconds (60 s)") || got.CompletedAt != fired.Add(61*time.Second).Unix() {
				t.Fatalf("schedule run %+v after its timeout, want failed with the timeout", got)
			}
			waitStatus(t, d, sr.RunID, run.StatusCancelled)
			tickAll(t, []*schedule.Scheduler{sched}) // the cancelled run does not rewrite the firing's outcome
			if again := onlyScheduleRun(t, d, sc.ID); again.Status != db.ScheduleRunFailed || again.Error != got.Error {
				t.Fatalf("schedule run %+v after the run ended, want the timeout kept", again)
			}
		})
	}
}

// failOnce is a model whose first call panics (a crashed attempt, retried
// by the queue) and whose later calls answer.
type failOnce struct {
	calls atomic.Int64
	at    [2]atomic.Int64 // unix nanoseconds of the first two calls
	ok    *scripted.Model
}

func (m *failOnce) Info() model.Info { return m.ok.Info() }

func (m *failOnce) called() {
	n := m.calls.Add(1)
	if n <= 2 {
		m.at[n-1].Store(time.Now().UnixNano())
	}
	if n == 1 {
		panic("the provider's client crashed")
	}
}

func (m *failOnce) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.called()
	return m.ok.Invoke(ctx, req)
}

func (m *failOnce) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	m.called()
	return m.ok.Stream(ctx, req)
}

// TestSchedules_RetryDelayIsTheQueuesWaitBetweenAttempts: the queue waits
// an hour between a run's attempts; a firing of a schedule with
// retry_delay_seconds 1 is retried after a second, and completes.
func TestSchedules_RetryDelayIsTheQueuesWaitBetweenAttempts(t *testing.T) {
	for name, open := range scheduleDrivers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			m := &failOnce{ok: scripted.Reply("second time lucky")}
			flaky, err := agent.New(agent.Config{ID: "flaky", Name: "Flaky", DB: d, Model: m})
			if err != nil {
				t.Fatal(err)
			}
			clk := &testClock{}
			start := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
			clk.Set(start)
			u, srv := scheduledServerQueue(t, d, clk, schedule.Config{}, queue.Config{RetryDelay: time.Hour}, flaky)
			res := jsonPost(t, u+"/schedules", `{"name":"flaky","cron_expr":"* * * * *","endpoint":"/agents/flaky/runs",`+
				`"retry_delay_seconds":1,"payload":{"message":"try"}}`)
			if res.status != http.StatusCreated {
				t.Fatalf("create: %d %s", res.status, res.body)
			}
			sc := decode[scheduleView](t, res)
			if sc.RetryDelaySeconds != 1 {
				t.Fatalf("retry_delay_seconds = %d", sc.RetryDelaySeconds)
			}
			clk.Set(start.Add(35 * time.Second))
			tickAll(t, []*schedule.Scheduler{srv.Scheduler()})
			sr := onlyScheduleRun(t, d, sc.ID)
			waitStatus(t, d, sr.RunID, run.StatusCompleted)
			if gap := time.Duration(m.at[1].Load() - m.at[0].Load()); m.calls.Load() != 2 || gap < 900*time.Millisecond {
				t.Fatalf("%d model calls, the retry %s after the crash; want 2, about 1 s apart", m.calls.Load(), gap)
			}
			tickAll(t, []*schedule.Scheduler{srv.Scheduler()})
			got := onlyScheduleRun(t, d, sc.ID)
			var out struct{ Content string }
			_ = json.Unmarshal(got.Output, &out)
			if got.Status != db.ScheduleRunSuccess || out.Content != "second time lucky" {
				t.Fatalf("schedule run %+v (output %s), want success", got, got.Output)
			}
		})
	}
}

// TestSchedules_AFiringWhoseRunWasDeletedIsFinished: a firing whose run
// was deleted (its session deleted) before the scheduler saw it end can
// never end by itself: the scheduler fails it with the reason instead of
// leaving it running (and re-reading it every poll) for ever.
func TestSchedules_AFiringWhoseRunWasDeletedIsFinished(t *testing.T) {
	t.Parallel()
	d := scheduleDrivers["sqlite"](t)
	clk := &testClock{}
	start := time.Date(2026, 1, 1, 0, 0, 30, 0, time.UTC)
	clk.Set(start)
	u, srv := scheduledServer(t, d, clk, schedule.Config{})
	sc := createEveryMinute(t, u, "deleted")
	sched := srv.Scheduler()
	clk.Set(start.Add(35 * time.Second)) // 00:01:05, due 00:01:00
	tickAll(t, []*schedule.Scheduler{sched})
	sr := onlyScheduleRun(t, d, sc.ID)
	waitJob(t, u, sr.RunID, queue.StatusCompleted, nil)
	// The scheduler has not seen the run end (as after a crash, or when the
	// tick that fired it ended before the run did). The fast scripted run
	// may already have been seen by the firing tick's own reconcile: put
	// the row back as it is until then.
	st, _ := sqlstore.FromDB(d)
	if _, err := st.SQL().ExecContext(context.Background(),
		`UPDATE agno_schedule_runs SET status = 'running', completed_at = NULL, output = NULL WHERE id = ?`, sr.ID); err != nil {
		t.Fatal(err)
	}
	if err := d.DeleteSessions(context.Background(), sr.SessionID); err != nil {
		t.Fatal(err)
	}
	if _, err := d.GetRun(context.Background(), sr.RunID); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("run after its session was deleted: %v", err)
	}
	clk.Set(start.Add(40 * time.Second)) // nothing due: only the follow-up
	tickAll(t, []*schedule.Scheduler{sched})
	got := onlyScheduleRun(t, d, sc.ID)
	if got.Status != db.ScheduleRunFailed || !strings.Contains(got.Error, "no longer exists") || got.CompletedAt == 0 {
		t.Fatalf("schedule run %+v after its run was deleted, want failed saying so", got)
	}
}
