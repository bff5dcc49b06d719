package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/schedule"
)

// TestTick_AdvancesANextRunAtStoredAsReal: Agno's Python stores a
// next_run_at it computed as a float on SQLite (a REAL, 1780304400.5, that
// the BIGINT column keeps as it is); the scheduler reads it truncated to
// the second and moves it with a compare-and-set from that second. Before,
// the compare-and-set compared the REAL with the integer, never matched,
// and the schedule stayed due: every poll fired it again.
func TestTick_AdvancesANextRunAtStoredAsReal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdbs.SQLite(t)
	now := time.Date(2026, 12, 5, 12, 7, 30, 0, time.UTC)
	due := now.Add(-7*time.Minute - 30*time.Second) // 12:00, the hourly due time
	createDue(t, d, "real", 1, due)
	st, _ := sqlstore.FromDB(d)
	dl := st.SQLDialect()
	table := dl.Table(st.Tables().Schedules)
	if _, err := st.SQL().ExecContext(ctx, dl.Bind("UPDATE "+table+" SET next_run_at = ? WHERE id = ?"), float64(due.Unix())+0.5, "real000"); err != nil {
		t.Fatal(err)
	}
	var typ string
	if err := st.SQL().QueryRowContext(ctx, dl.Bind("SELECT typeof(next_run_at) FROM "+table+" WHERE id = ?"), "real000").Scan(&typ); err != nil || typ != "real" {
		t.Fatalf("next_run_at stored as %q (%v), want a REAL", typ, err)
	}
	f := &keyedFirer{}
	s, err := schedule.New(d, f, schedule.Config{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := s.Tick(ctx); err != nil {
			t.Fatal(err)
		}
	}
	sc, err := d.GetSchedule(ctx, "real000")
	if err != nil {
		t.Fatal(err)
	}
	if want := due.Add(time.Hour).Unix(); sc.NextRunAt != want {
		t.Errorf("next_run_at = %d after the firing, want %d (13:00): the schedule stays due", sc.NextRunAt, want)
	}
	if f.calls != 1 {
		t.Errorf("three polls fired %d times, want once", f.calls)
	}
	// The compare-and-set still refuses a value that is not the stored one.
	if moved, err := d.AdvanceSchedule(ctx, "real000", due.Unix(), due.Add(2*time.Hour).Unix()); err != nil || moved {
		t.Errorf("advance from a stale next_run_at = %v, %v, want refused", moved, err)
	}
}
