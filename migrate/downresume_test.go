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
	t.Parallel()
	for _, v := range oneOfEach {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t, v)
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
			migrate.SetAfterRunsDrop(m, func() error { return crash })
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
}

// A runs table dropped by hand from a 3.0 database, with no Down to account
// for it, is a schema mismatch for Status and Down: the legacy column may
// hold stale runs, so Down does not take it for an interrupted Down.
func TestStatus_RunsTableDroppedByHandIsSchemaMismatch(t *testing.T) {
	t.Parallel()
	for _, v := range oneOfEach {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t, v)
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
}
