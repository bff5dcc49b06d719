package schedule_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/schedule"
)

// failingFirer fails every firing of a schedule whose id starts with
// "bad" (a transient error: the schedule stays due) and records the others.
type failingFirer struct {
	mu    sync.Mutex
	fired []string
}

var errDown = errors.New("queue unavailable")

func (f *failingFirer) Fire(_ context.Context, sc *db.Schedule, _ schedule.Firing) (schedule.Fired, error) {
	if strings.HasPrefix(sc.ID, "bad") {
		return schedule.Fired{}, errDown
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fired = append(f.fired, sc.ID)
	return schedule.Fired{RunID: "run-" + sc.ID}, nil
}

// createDue creates n enabled schedules named prefix000… due one second
// apart from first.
func createDue(t *testing.T, d *db.DB, prefix string, n int, first time.Time) {
	t.Helper()
	for i := range n {
		id := fmt.Sprintf("%s%03d", prefix, i)
		if _, err := d.CreateSchedule(context.Background(), &db.Schedule{ID: id, Name: id, Method: "POST", Endpoint: "/agents/a/runs",
			Payload: []byte(`{"message":"hi"}`), CronExpr: "0 * * * *", Timezone: "UTC", Enabled: true,
			NextRunAt: first.Unix() + int64(i), CreatedAt: first.Unix()}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTick_FailingSchedulesDoNotBlockTheOnesBehindThem: 150 due
// schedules whose firing fails every time (they stay due, at the head of
// the due order) do not keep the schedule due after them from firing.
// Before, every read of due schedules returned the first 100 failing
// rows, the tick saw nothing new and stopped: "good" never fired.
// SQLite, Postgres and the memory driver.
func TestTick_FailingSchedulesDoNotBlockTheOnesBehindThem(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres", "memory"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := testdbs.All[name](t)
			now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
			createDue(t, d, "bad", 150, now.Add(-time.Hour))
			createDue(t, d, "good", 1, now.Add(-time.Minute))
			f := &failingFirer{}
			s, err := schedule.New(d, f, schedule.Config{Clock: func() time.Time { return now }})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Tick(ctx); !errors.Is(err, errDown) {
				t.Errorf("tick = %v, want the failed firings reported", err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.fired) != 1 || f.fired[0] != "good000" {
				t.Errorf("fired %v, want [good000]", f.fired)
			}
		})
	}
}

// TestTick_CorruptSchedulesDoNotBlockTheOnesBehindThem: 150 due rows
// another writer left undecodable, due before a healthy schedule, do not
// keep it from firing. Before, the first read decoded none of its 100
// rows and the tick stopped there, every poll. SQLite, whose columns
// take any text (Postgres's JSONB payload refuses it).
func TestTick_CorruptSchedulesDoNotBlockTheOnesBehindThem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdbs.SQLite(t)
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	createDue(t, d, "bad", 150, now.Add(-time.Hour))
	createDue(t, d, "good", 1, now.Add(-time.Minute))
	st, _ := sqlstore.FromDB(d)
	dl := st.SQLDialect()
	if _, err := st.SQL().ExecContext(ctx, dl.Bind("UPDATE "+dl.Table(st.Tables().Schedules)+" SET payload = '{broken' WHERE id LIKE 'bad%'")); err != nil {
		t.Fatal(err)
	}
	f := &failingFirer{}
	s, err := schedule.New(d, f, schedule.Config{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Tick(ctx); !errors.Is(err, db.ErrCorruptRow) {
		t.Errorf("tick = %v, want the corrupt rows reported", err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.fired) != 1 || f.fired[0] != "good000" {
		t.Errorf("fired %v, want [good000]", f.fired)
	}
}

// TestTick_FractionalNextRunAtEnds: 150 due rows whose next_run_at
// another writer stored as a REAL within one second (Python's
// time.time() on SQLite; read truncated to the second) end the tick,
// each fired, and the schedule due after them fires. Before the tick's
// reads resumed after the truncated second, read the same 100 rows again
// and again, and never ended (the deadline only ends a test that hangs).
func TestTick_FractionalNextRunAtEnds(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d := testdbs.SQLite(t)
	now := time.Date(2026, 12, 5, 12, 7, 30, 0, time.UTC)
	createDue(t, d, "real", 150, now.Add(-time.Hour))
	createDue(t, d, "tail", 1, now.Add(-time.Minute))
	st, _ := sqlstore.FromDB(d)
	dl := st.SQLDialect()
	if _, err := st.SQL().ExecContext(ctx, dl.Bind("UPDATE "+dl.Table(st.Tables().Schedules)+" SET next_run_at = ? WHERE id LIKE 'real%'"),
		float64(now.Add(-time.Hour).Unix())+0.5); err != nil {
		t.Fatal(err)
	}
	f := &keyedFirer{}
	s, err := schedule.New(d, f, schedule.Config{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Tick(ctx); err != nil {
		t.Errorf("tick: %v", err)
	}
	if len(f.runs) != 151 || f.runs[schedule.Key("tail000", now.Add(-time.Minute))] == "" {
		t.Errorf("fired %d runs, want one for each of the 151 schedules, tail000's among them", len(f.runs))
	}
}
