package schedule_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/schedule"
)

// TestTick_ACorruptRunningFiringDoesNotStopTheOthers: a running firing
// whose row another writer left undecodable (its input is not JSON) is
// reported, and the other running firings are still followed: one whose
// run completed is finished. Before, the poll returned on the list's
// error: no firing was ever finished, timed out or retried while that
// row stayed. SQLite, whose columns take any text.
func TestTick_ACorruptRunningFiringDoesNotStopTheOthers(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	f := newFirings(t, d)
	f.running("sr-good", "run-good", run.StatusCompleted, `{"content":"done"}`, f.now.Unix())
	f.running("sr-bad", "run-bad", run.StatusRunning, `{}`, f.now.Unix())
	ctx := context.Background()
	st, _ := sqlstore.FromDB(d)
	dl := st.SQLDialect()
	if _, err := st.SQL().ExecContext(ctx, dl.Bind("UPDATE "+dl.Table(st.Tables().ScheduleRuns)+" SET input = '{broken' WHERE id = ?"), "sr-bad"); err != nil {
		t.Fatal(err)
	}
	s, err := schedule.New(d, neverFirer{t}, schedule.Config{Clock: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Tick(ctx); !errors.Is(err, db.ErrCorruptRow) {
		t.Errorf("tick = %v, want the corrupt row reported", err)
	}
	good, err := d.GetScheduleRun(ctx, "sr-good")
	if err != nil {
		t.Fatal(err)
	}
	if good.Status != db.ScheduleRunSuccess {
		t.Errorf("the firing whose run completed is %s, want success", good.Status)
	}
}
