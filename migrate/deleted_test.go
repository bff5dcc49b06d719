package migrate_test

import (
	"context"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// A run deleted from the runs table after Up copied it (through Agentry's
// API) stays deleted: later Ups do not copy it back from the legacy column,
// and status and cleanup do not count it as uncopied, while a run the copy
// never saw is still copied. Once a 2.x process changes the deleted run, it
// is a conflict, never a silent resurrection.
func TestUp_RunDeletedAfterCopyStaysDeleted(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		a1, a2 := element("run-a1", "s-a", "COMPLETED", ""), element("run-a2", "s-a", "COMPLETED", "")
		a3 := element("run-a3", "s-a", "COMPLETED", "")
		f.insert(t, []migratetest.Session{
			legacyAgentSession("s-a", "["+a1+", "+a2+"]"),
			legacyAgentSession("s-b", "["+element("run-b1", "s-b", "COMPLETED", "")+"]"),
		})
		m := f.manager(t)
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		f.execArgs(t, "DELETE FROM "+f.table("agno_runs")+" WHERE run_id = ?", "run-a1")
		f.setLegacyRuns(t, "s-a", "["+a1+", "+a2+", "+a3+"]") // a 2.x process adds run-a3

		if st := statusOf(t, m, migrate.KindSessions); st.UncopiedRuns != 1 || st.ChangedRuns != 0 {
			t.Fatalf("status = %+v; want run-a3 alone uncopied", st.Uncopied)
		}
		for i := range 2 {
			sum, err := m.Up(ctx, "")
			if want := int64(1 - i); err != nil || sum.RunsCopied != want || sum.BadRowCount != 0 {
				t.Fatalf("Up #%d = %+v, %v; want %d runs copied (run-a3), no bad row", i+1, sum, err, want)
			}
			runs := f.readRuns(t)
			if _, ok := runs["run-a1"]; ok {
				t.Fatalf("Up #%d copied the deleted run-a1 back", i+1)
			}
			if _, ok := runs["run-a3"]; !ok {
				t.Fatalf("Up #%d did not copy run-a3", i+1)
			}
		}
		if st := statusOf(t, m, migrate.KindSessions); st.UncopiedRuns != 0 {
			t.Fatalf("status = %+v; want nothing uncopied", st.Uncopied)
		}

		// The 2.x process changes the deleted run.
		f.setLegacyRuns(t, "s-a", "["+element("run-a1", "s-a", "COMPLETED", `, "content": "again"`)+", "+a2+", "+a3+"]")
		if st := statusOf(t, m, migrate.KindSessions); st.UncopiedRuns != 1 || st.ChangedRuns != 1 {
			t.Fatalf("status = %+v; want run-a1 changed", st.Uncopied)
		}
		sum, err := m.Up(ctx, "")
		if err != nil || sum.RunsCopied != 0 || sum.BadRowCount != 1 || sum.BadRows[0].Kind != migrate.BadRunEditedBothSides || sum.BadRows[0].SessionID != "s-a" {
			t.Fatalf("Up = %+v, %v; want run-a1 a %s conflict", sum, err, migrate.BadRunEditedBothSides)
		}
		if _, ok := f.readRuns(t)["run-a1"]; ok {
			t.Fatal("Up copied the deleted, then changed, run-a1 back")
		}
		if res, err := m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true}); !errors.Is(err, migrate.ErrUncopiedRuns) || res.Dropped {
			t.Fatalf("cleanup = %+v, %v; want ErrUncopiedRuns", res, err)
		}

		// Keeping it deleted: the element leaves the column.
		f.setLegacyRuns(t, "s-a", "["+a2+", "+a3+"]")
		if sum, err := m.Up(ctx, ""); err != nil || sum.BadRowCount != 0 || sum.RunsCopied != 0 {
			t.Fatalf("Up after the fix = %+v, %v", sum, err)
		}
		if res, err := m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true}); err != nil || !res.Dropped {
			t.Fatalf("cleanup after the fix = %+v, %v", res, err)
		}
	})
}
