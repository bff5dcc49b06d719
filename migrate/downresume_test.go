package migrate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// sessionsStatus returns the sessions table's status.
func sessionsStatus(t *testing.T, m *migrate.Manager) (migrate.TableStatus, error) {
	t.Helper()
	sts, err := m.Status(context.Background())
	for _, st := range sts {
		if st.Kind == migrate.KindSessions {
			return st, nil
		}
	}
	if err == nil {
		t.Fatal("Status reported no sessions table")
	}
	return migrate.TableStatus{}, err
}

// A Down that stops right after it dropped the runs table (every run
// written back, the sessions table still stamped 3.0.0) leaves a state
// Status explains, Up refuses and a dry run of Down plans; rerunning Down
// finishes it, with every run in the legacy column, and Up brings them back.
func TestDown_ResumesAfterStopPastRunsDrop(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{
			legacyAgentSession("s-a", "["+element("run-a1", "s-a", "COMPLETED", "")+", "+element("run-a2", "s-a", "COMPLETED", "")+"]"),
			legacyAgentSession("s-b", "["+element("run-b1", "s-b", "COMPLETED", "")+"]"),
		})
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		// Only the runs table holds the runs now: Down must write each back.
		if res, err := f.manager(t).CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true}); err != nil || !res.Dropped {
			t.Fatalf("cleanup = %+v, %v", res, err)
		}

		crash := errors.New("crash after the drop")
		m := f.manager(t)
		migrate.SetStopAt(m, func(point string) error {
			if point == "after runs drop" {
				return crash
			}
			return nil
		})
		if _, err := m.Down(ctx, "2.5.6"); !errors.Is(err, crash) {
			t.Fatalf("Down with a stop after the drop = %v, want %v", err, crash)
		}

		st, err := sessionsStatus(t, f.manager(t))
		if err != nil || !st.DownInterrupted || st.Current != "3.0.0" {
			t.Fatalf("Status after the stop = %+v, %v; want the sessions table at 3.0.0 with DownInterrupted", st, err)
		}
		if _, err := f.manager(t).Up(ctx, ""); !errors.Is(err, migrate.ErrDownInterrupted) {
			t.Fatalf("Up after the stop = %v, want ErrDownInterrupted", err)
		}
		dry, err := f.manager(t, func(c *migrate.Config) { c.DryRun = true }).Down(ctx, "2.5.6")
		if err != nil || dry.To["agno_sessions"] != "2.5.6" {
			t.Fatalf("dry Down after the stop = %+v, %v; want it to plan the sessions table to 2.5.6", dry, err)
		}
		if st, err := sessionsStatus(t, f.manager(t)); err != nil || !st.DownInterrupted {
			t.Fatalf("the dry run changed the state: %+v, %v", st, err)
		}

		if _, err := f.manager(t).Down(ctx, "2.5.6"); err != nil {
			t.Fatalf("Down again: %v", err)
		}
		assertAllAt(t, f.manager(t), "2.5.6")
		if st, err := sessionsStatus(t, f.manager(t)); err != nil || st.DownInterrupted || !st.LegacyRunsColumn || st.RowsWithRuns != 2 {
			t.Fatalf("Status after Down finished = %+v, %v; want 2 sessions with legacy runs, no interrupted down", st, err)
		}
		a, b := f.legacyColumn(t, "s-a"), f.legacyColumn(t, "s-b")
		if !strings.Contains(a, "run-a1") || !strings.Contains(a, "run-a2") || !strings.Contains(b, "run-b1") {
			t.Fatalf("legacy column after Down: s-a = %s, s-b = %s; want every run", a, b)
		}
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if runs := f.readRuns(t); len(runs) != 3 {
			t.Errorf("runs after Up again = %v, want run-a1, run-a2, run-b1", keys(runs))
		}
	})
}

// A runs table dropped by hand from a 3.0 database, with no Down to account
// for it, is a schema mismatch for Status and Down: the legacy column may
// hold stale runs, so Down does not take it for an interrupted Down.
func TestStatus_RunsTableDroppedByHandIsSchemaMismatch(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{legacyAgentSession("s-a", "["+element("run-a1", "s-a", "COMPLETED", "")+"]")})
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		f.exec(t, "DROP TABLE "+f.table("agno_runs"))
		var mismatch *migrate.SchemaMismatchError
		if _, err := f.manager(t).Status(ctx); !errors.As(err, &mismatch) || !strings.Contains(mismatch.Detail, "agno_runs is missing") {
			t.Fatalf("Status = %v, want a SchemaMismatchError naming the missing runs table", err)
		}
		if _, err := f.manager(t).Down(ctx, "2.5.6"); !errors.Is(err, db.ErrSchemaMismatch) {
			t.Fatalf("Down = %v, want ErrSchemaMismatch", err)
		}
		if st, err := sessionsStatus(t, f.manager(t)); !errors.Is(err, db.ErrSchemaMismatch) {
			t.Fatalf("Status after Down = %+v, %v; want the mismatch still", st, err)
		}
	})
}

// A Down that stops after writing every run back but before it drops the
// runs table resumes from the start: its rerun still leaves out a run
// deleted after its copy. If Up runs instead, the runs table is in use
// again (Up's read of the legacy column replaces the stopped Down's record
// with its own checkpoint, then clears it), and a later drop of it by hand
// is a schema mismatch, not taken for the stopped Down's.
func TestDown_StopBeforeRunsDrop(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{
			legacyAgentSession("s-a", "["+element("run-del", "s-a", "COMPLETED", "")+", "+element("run-keep", "s-a", "COMPLETED", "")+"]"),
		})
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		f.exec(t, "DELETE FROM "+f.table("agno_runs")+" WHERE run_id = 'run-del'")
		crash := errors.New("crash before the drop")
		stopBeforeDrop := func() {
			t.Helper()
			m := f.manager(t)
			migrate.SetStopAt(m, func(point string) error {
				if point == "before runs drop" {
					return crash
				}
				return nil
			})
			if _, err := m.Down(ctx, "2.5.6"); !errors.Is(err, crash) {
				t.Fatalf("Down with a stop before the drop = %v, want %v", err, crash)
			}
			if st, err := sessionsStatus(t, f.manager(t)); err != nil || st.DownInterrupted || st.Current != "3.0.0" {
				t.Fatalf("Status after the stop = %+v, %v; want the sessions table at 3.0.0, no interrupted drop", st, err)
			}
		}

		stopBeforeDrop()
		if sum, err := f.manager(t).Down(ctx, "2.5.6"); err != nil {
			t.Fatalf("Down again = %+v, %v", sum, err)
		}
		if a := f.legacyColumn(t, "s-a"); strings.Contains(a, "run-del") || !strings.Contains(a, "run-keep") {
			t.Fatalf("legacy column after the resumed Down = %s; want run-keep without the deleted run-del", a)
		}

		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		stopBeforeDrop()
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		f.exec(t, "DROP TABLE "+f.table("agno_runs"))
		if st, err := sessionsStatus(t, f.manager(t)); !errors.Is(err, db.ErrSchemaMismatch) {
			t.Fatalf("Status after Up and a drop by hand = %+v, %v; want ErrSchemaMismatch", st, err)
		}
	})
}
