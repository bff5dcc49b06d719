package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/schedule"
)

// setNextRunAt writes next_run_at as another writer (Agno) would: 0 and
// NULL are distinct there.
func setNextRunAt(t *testing.T, d *db.DB, id string, v any) {
	t.Helper()
	st, _ := sqlstore.FromDB(d)
	dl := st.SQLDialect()
	if _, err := st.SQL().ExecContext(context.Background(), dl.Bind("UPDATE "+dl.Table(st.Tables().Schedules)+" SET next_run_at = ? WHERE id = ?"), v, id); err != nil {
		t.Fatal(err)
	}
}

// TestTick_NextRunAtZeroFiresOnceNow: Agno's poller claims a row whose
// next_run_at is 0 as due now (0 <= now; NULL is never due), fires it once
// and moves next_run_at to the next due time. Here too, whatever the
// catch-up policy: one firing, for the latest due time, and next_run_at
// after now. Before, 0 was read as a due time in 1970: the scheduler
// walked a million due times from there and fired ten from 1971.
// SQLite and Postgres.
func TestTick_NextRunAtZeroFiresOnceNow(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := testdbs.All[name](t)
			now := time.Date(2026, 12, 5, 12, 7, 30, 0, time.UTC)
			for _, id := range []string{"zero", "null"} {
				if _, err := d.CreateSchedule(ctx, &db.Schedule{ID: id, Name: id, Method: "POST", Endpoint: "/agents/a/runs",
					CronExpr: "*/5 * * * *", Timezone: "UTC", Enabled: true, NextRunAt: now.Unix(), CreatedAt: now.Unix()}); err != nil {
					t.Fatal(err)
				}
			}
			setNextRunAt(t, d, "zero", 0)
			setNextRunAt(t, d, "null", nil)
			f := &keyedFirer{}
			s, err := schedule.New(d, f, schedule.Config{Clock: func() time.Time { return now }, CatchUp: schedule.CatchUpAll})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			want := schedule.Key("zero", time.Date(2026, 12, 5, 12, 5, 0, 0, time.UTC))
			if _, ok := f.runs[want]; len(f.runs) != 1 || !ok {
				t.Errorf("fired %v, want one firing keyed %s", f.runs, want)
			}
			got, err := d.GetSchedule(ctx, "zero")
			if err != nil {
				t.Fatal(err)
			}
			if next := time.Date(2026, 12, 5, 12, 10, 0, 0, time.UTC).Unix(); got.NextRunAt != next {
				t.Errorf("next_run_at = %d, want %d", got.NextRunAt, next)
			}
		})
	}
}

// TestTick_LongDowntimeFiresTheLatestDueTime: a minutely schedule whose
// scheduler was down for three years fires, under the latest policy, its
// most recent due time. Before, the walk from next_run_at stopped after a
// million due times and fired the last one it had reached, two years
// old.
func TestTick_LongDowntimeFiresTheLatestDueTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdbs.SQLite(t)
	now := time.Date(2026, 12, 5, 12, 7, 30, 0, time.UTC)
	if _, err := d.CreateSchedule(ctx, &db.Schedule{ID: "m", Name: "m", Method: "POST", Endpoint: "/agents/a/runs",
		CronExpr: "* * * * *", Timezone: "UTC", Enabled: true, NextRunAt: now.AddDate(-3, 0, 0).Unix(), CreatedAt: now.Unix()}); err != nil {
		t.Fatal(err)
	}
	f := &keyedFirer{}
	s, err := schedule.New(d, f, schedule.Config{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	want := schedule.Key("m", time.Date(2026, 12, 5, 12, 7, 0, 0, time.UTC))
	if _, ok := f.runs[want]; len(f.runs) != 1 || !ok {
		t.Errorf("fired %v, want one firing keyed %s", f.runs, want)
	}
}

// TestTick_NeverDueAgainIsNotDueEveryPoll: a schedule whose expression
// matches no time to come (30 February), due once from a row another
// writer set, is read, fires nothing, and leaves next_run_at NULL: no
// longer due. Before, next_run_at was set to 0, which the due query
// reads as due: the schedule was due again at every poll, forever.
// SQLite and Postgres.
func TestTick_NeverDueAgainIsNotDueEveryPoll(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := testdbs.All[name](t)
			now := time.Date(2026, 12, 5, 12, 7, 30, 0, time.UTC)
			if _, err := d.CreateSchedule(ctx, &db.Schedule{ID: "feb30", Name: "feb30", Method: "POST", Endpoint: "/agents/a/runs",
				CronExpr: "0 0 30 2 *", Timezone: "UTC", Enabled: true, NextRunAt: now.Add(-time.Hour).Unix(), CreatedAt: now.Unix()}); err != nil {
				t.Fatal(err)
			}
			f := &keyedFirer{}
			s, err := schedule.New(d, f, schedule.Config{Clock: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Tick(ctx); err != nil {
				t.Fatal(err)
			}
			due, err := d.DueSchedules(ctx, now.Add(time.Hour).Unix(), nil, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(due) != 0 {
				t.Errorf("still due after the tick: %+v", due)
			}
		})
	}
}
