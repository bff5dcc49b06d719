package migrate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// agentryWritesSameSecond changes a copied run as Agentry does within the
// second the copy stamped the row with: new content, updated_at unchanged.
func (f *fixtureDB) agentryWritesSameSecond(t *testing.T, runID, status, data string) {
	t.Helper()
	f.execArgs(t, "UPDATE "+f.table("agno_runs")+" SET status = ?, run_data = ? WHERE run_id = ?", status, data, runID)
}

// A run Agentry writes in the second its copy stamped the row with keeps
// the row's updated_at: a later 2.x change of its legacy element is a
// conflict all the same (the row's content is not the one copied), never
// copied over Agentry's write. A run only the 2.x process changed is still
// copied again, whatever spelling the database gave the stored JSON
// (Postgres JSONB and MySQL JSON rewrite keys, spacing and numbers).
func TestUp_SameSecondAgentryWriteIsNotOverwritten(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		nums := `, "metrics": {"time": 1.50, "tokens": 1E2, "cost": -0.0}, "content": "A\u00e9\n"`
		f.insert(t, []migratetest.Session{
			legacyAgentSession("s-a", "["+element("run-a1", "s-a", "PAUSED", nums)+", "+element("run-a2", "s-a", "PAUSED", nums)+"]"),
		})
		m := f.manager(t)
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		f.agentryWritesSameSecond(t, "run-a1", "CANCELLED", element("run-a1", "s-a", "CANCELLED", `, "content": "agentry"`))
		rowA1 := f.rawRun(t, "run-a1")
		f.setLegacyRuns(t, "s-a", "["+element("run-a1", "s-a", "COMPLETED", `, "content": "2.x"`)+", "+
			element("run-a2", "s-a", "COMPLETED", nums)+"]")

		if st := statusOf(t, m, migrate.KindSessions); st.ChangedRuns != 2 || st.UncopiedRuns != 2 {
			t.Fatalf("status = %+v; want 2 changed runs", st.Uncopied)
		}
		sum, err := m.Up(ctx, "")
		if err != nil || sum.RunsRecopied != 1 || sum.BadRowCount != 1 {
			t.Fatalf("Up = %+v, %v; want run-a2 copied again and run-a1 a conflict", sum, err)
		}
		if b := sum.BadRows[0]; b.SessionID != "s-a" || b.Position != 0 || b.Kind != migrate.BadRunEditedBothSides {
			t.Errorf("bad row = %+v; want s-a #0 %s", b, migrate.BadRunEditedBothSides)
		}
		if r := f.rawRun(t, "run-a1"); r != rowA1 {
			t.Errorf("run-a1 = %+v; Up overwrote Agentry's same-second write %+v", r, rowA1)
		}
		if r := f.rawRun(t, "run-a2"); r.Status != "COMPLETED" || !strings.Contains(r.Data, "tokens") {
			t.Errorf("run-a2 = %+v; want the 2.x process's COMPLETED version", r)
		}
		if sum, err := m.Up(ctx, ""); err != nil || sum.RunsRecopied != 0 || sum.BadRowCount != 1 {
			t.Fatalf("third Up = %+v, %v; want only the conflict again", sum, err)
		}
	})
}

// Copy records an earlier release wrote have no row digest (their table
// lacks the column): status reads them as they are, Up adds the column and
// judges those records by updated_at alone, as before.
func TestUp_CopyRecordsWithoutRowDigest(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{legacyAgentSession("s-a", "["+element("run-a1", "s-a", "PAUSED", "")+"]")})
		m := f.manager(t)
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		f.exec(t, "ALTER TABLE "+f.table("agno_migration_copied_runs")+" DROP COLUMN row_digest")
		f.setLegacyRuns(t, "s-a", "["+element("run-a1", "s-a", "COMPLETED", "")+"]")
		if st := statusOf(t, m, migrate.KindSessions); st.ChangedRuns != 1 {
			t.Fatalf("status = %+v; want 1 changed run", st.Uncopied)
		}
		if sum, err := m.Up(ctx, ""); err != nil || sum.RunsRecopied != 1 || sum.BadRowCount != 0 {
			t.Fatalf("Up = %+v, %v; want run-a1 copied again", sum, err)
		}
		if !f.columns(t, "agno_migration_copied_runs")["row_digest"] {
			t.Error("Up did not add row_digest to the copied-runs table")
		}
		// The new record has the digest: a same-second write is seen.
		f.agentryWritesSameSecond(t, "run-a1", "CANCELLED", element("run-a1", "s-a", "CANCELLED", ""))
		f.setLegacyRuns(t, "s-a", "["+element("run-a1", "s-a", "COMPLETED", `, "content": "2.x"`)+"]")
		if sum, err := m.Up(ctx, ""); err != nil || sum.RunsRecopied != 0 || sum.BadRowCount != 1 {
			t.Fatalf("Up = %+v, %v; want a conflict", sum, err)
		}
	})
}
