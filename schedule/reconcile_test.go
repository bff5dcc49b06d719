package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/schedule"
)

// neverFirer fails the test if the scheduler fires: the schedule below is
// never due.
type neverFirer struct{ t *testing.T }

func (f neverFirer) Fire(context.Context, *db.Schedule, schedule.Firing) (schedule.Fired, error) {
	f.t.Error("fired a schedule that is not due")
	return schedule.Fired{}, fmt.Errorf("not due")
}

// TestTick_ReconcilesEveryRunningFiring: one tick finishes every running
// firing whose run ended, however many pages they fill. Paging the
// running rows while finishing them shifted the later pages over rows
// not yet seen (150 firings: 50 stayed running after the tick).
func TestTick_ReconcilesEveryRunningFiring(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdbs.SQLite(t)
	f := newFirings(t, d)
	const n = 150
	for i := range n {
		runID := fmt.Sprintf("run-%03d", i)
		f.running(fmt.Sprintf("sr-%03d", i), runID, run.StatusCompleted, `{"run_id":"`+runID+`","content":"done"}`, f.now.Unix()-int64(i))
	}
	f.tick()
	_, running, err := d.ListScheduleRuns(ctx, db.ScheduleRunFilter{Status: db.ScheduleRunRunning, Limit: 1, Page: 1})
	if err != nil {
		t.Fatal(err)
	}
	_, ok, _ := d.ListScheduleRuns(ctx, db.ScheduleRunFilter{Status: db.ScheduleRunSuccess, Limit: 1, Page: 1})
	if running != 0 || ok != n {
		t.Errorf("after one tick: %d running, %d success; want 0 and %d", running, ok, n)
	}
}

// countingFirer records the schedules it fires.
type countingFirer struct {
	mu    sync.Mutex
	fired []string
}

func (f *countingFirer) Fire(_ context.Context, sc *db.Schedule, _ schedule.Firing) (schedule.Fired, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fired = append(f.fired, sc.ID)
	return schedule.Fired{RunID: "run-" + sc.ID, SessionID: "sess"}, nil
}

// TestTick_CorruptDueScheduleDoesNotStopTheOthers: a due schedule whose
// row another writer left undecodable (broken payload JSON) is reported,
// and the schedules due with it still fire. Before, the tick returned on
// the list's error and fired none of them, on every tick.
func TestTick_CorruptDueScheduleDoesNotStopTheOthers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdbs.SQLite(t)
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	for i, id := range []string{"bad", "good"} {
		if _, err := d.CreateSchedule(ctx, &db.Schedule{ID: id, Name: id, Method: "POST", Endpoint: "/agents/a/runs",
			Payload: []byte(`{"message":"hi"}`), CronExpr: "0 * * * *", Timezone: "UTC", Enabled: true,
			NextRunAt: now.Add(-time.Duration(2-i) * time.Minute).Unix(), CreatedAt: now.Unix()}); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := sqlstore.FromDB(d)
	dl := st.SQLDialect()
	if _, err := st.SQL().ExecContext(ctx, dl.Bind("UPDATE "+dl.Table(st.Tables().Schedules)+" SET payload = '{broken' WHERE id = ?"), "bad"); err != nil {
		t.Fatal(err)
	}
	f := &countingFirer{}
	s, err := schedule.New(d, f, schedule.Config{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Tick(ctx)
	if !errors.Is(err, db.ErrCorruptRow) {
		t.Errorf("tick = %v, want the corrupt row reported", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.fired) != 1 || f.fired[0] != "good" {
		t.Errorf("fired %v, want [good]", f.fired)
	}
}

// TestTick_CorruptRowsDoNotDelayAFullBatch: a corrupt due row stays at
// the head of every read of due schedules (it is never advanced), so a
// read with it and 99 others is full, not the last: one tick fires all
// the due schedules. Before, the read of 100 rows that decoded 99 ended
// the tick, and the 100th schedule fired a poll late (and with 100
// corrupt rows, no schedule due after them ever fired). SQLite, whose
// columns take any text (Postgres's JSONB payload refuses it).
func TestTick_CorruptRowsDoNotDelayAFullBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdbs.SQLite(t)
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	const good = 100
	for i := range good + 1 {
		id := fmt.Sprintf("s%03d", i) // s000 is due first and corrupt
		if _, err := d.CreateSchedule(ctx, &db.Schedule{ID: id, Name: id, Method: "POST", Endpoint: "/agents/a/runs",
			Payload: []byte(`{"message":"hi"}`), CronExpr: "0 * * * *", Timezone: "UTC", Enabled: true,
			NextRunAt: now.Add(-time.Hour).Unix() + int64(i), CreatedAt: now.Unix()}); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := sqlstore.FromDB(d)
	dl := st.SQLDialect()
	if _, err := st.SQL().ExecContext(ctx, dl.Bind("UPDATE "+dl.Table(st.Tables().Schedules)+" SET payload = '{broken' WHERE id = ?"), "s000"); err != nil {
		t.Fatal(err)
	}
	f := &countingFirer{}
	s, err := schedule.New(d, f, schedule.Config{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Tick(ctx); !errors.Is(err, db.ErrCorruptRow) {
		t.Errorf("tick = %v, want the corrupt row reported", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.fired) != good {
		t.Errorf("one tick fired %d schedules, want the %d that decode", len(f.fired), good)
	}
	for _, id := range f.fired {
		if id == "s000" {
			t.Errorf("fired the corrupt schedule")
		}
	}
}
