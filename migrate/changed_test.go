package migrate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// rawRun is a runs-table row's updated_at, status and run_data text.
type rawRun struct {
	UpdatedAt int64
	Status    string
	Data      string
}

func (f *fixtureDB) rawRun(t *testing.T, runID string) rawRun {
	t.Helper()
	data := "run_data"
	if f.dialect == postgresName {
		data = "run_data::text"
	}
	q := "SELECT updated_at, COALESCE(status, ''), " + data + " FROM " + f.table("agno_runs") + " WHERE run_id = ?"
	if f.dialect == postgresName {
		q = strings.Replace(q, "?", "$1", 1)
	}
	var r rawRun
	if err := f.db.QueryRow(q, runID).Scan(&r.UpdatedAt, &r.Status, &r.Data); err != nil {
		t.Fatalf("read run %s: %v", runID, err)
	}
	return r
}

// agentryWrites changes a copied run as Agentry does: new content, updated_at
// set to now (here: later than the copy's).
func (f *fixtureDB) agentryWrites(t *testing.T, runID, status, data string) {
	t.Helper()
	f.execArgs(t, "UPDATE "+f.table("agno_runs")+" SET status = ?, run_data = ?, updated_at = updated_at + 60 WHERE run_id = ?", status, data, runID)
}

func element(id, session, status, extra string) string {
	return `{"run_id": "` + id + `", "agent_id": "a1", "session_id": "` + session + `", "status": "` + status + `", "created_at": 1700000100` + extra + `}`
}

// A 2.x process still running after Up continues a paused run it wrote:
// same run_id, new content in the legacy column. Status counts the change,
// cleanup refuses to drop it, and the next Up copies it over the row (which
// Agentry has not written since), once; runs that did not change, even
// re-encoded by the 2.x writer, are not rewritten.
func TestUp_CopiesRunsA2xProcessChangedAfterMigration(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{
			legacyAgentSession("s-a", "["+element("run-a1", "s-a", "PAUSED", `, "content": "waiting"`)+", "+element("run-a2", "s-a", "COMPLETED", `, "metrics": {"time": 1.5}`)+"]"),
			legacyAgentSession("s-b", "["+element("run-b1", "s-b", "COMPLETED", "")+"]"),
		})
		m := f.manager(t)
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		before := map[string]rawRun{}
		for _, id := range []string{"run-a1", "run-a2", "run-b1"} {
			before[id] = f.rawRun(t, id)
		}

		// The 2.x writer continues run-a1 and rewrites the whole array,
		// run-a2 in other spacing and key order.
		f.setLegacyRuns(t, "s-a", "["+element("run-a1", "s-a", "COMPLETED", `, "content": "done"`)+", "+
			`{"metrics":{"time":1.50},"created_at":1700000100,"status":"COMPLETED","session_id":"s-a","agent_id":"a1","run_id":"run-a2"}]`)

		if st := statusOf(t, m, migrate.KindSessions); st.UncopiedRuns != 1 || st.ChangedRuns != 1 || st.UncopiedSessions != 1 {
			t.Fatalf("status = %+v; want 1 changed run in 1 session", st.Uncopied)
		}
		res, err := m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true})
		if !errors.Is(err, migrate.ErrUncopiedRuns) || res.Dropped || res.ChangedRuns != 1 {
			t.Fatalf("cleanup = %+v, %v; want ErrUncopiedRuns for the changed run", res, err)
		}
		if !strings.Contains(err.Error(), "changed") {
			t.Errorf("error %q does not say the run changed", err)
		}
		dry, err := f.manager(t, func(c *migrate.Config) { c.DryRun = true }).Up(ctx, "")
		if err != nil || dry.RunsRecopied != 1 || dry.RunsCopied != 0 {
			t.Fatalf("dry Up = %+v, %v; want 1 run to copy again", dry, err)
		}
		if r := f.rawRun(t, "run-a1"); r != before["run-a1"] {
			t.Fatalf("the dry run wrote run-a1: %+v", r)
		}

		sum, err := m.Up(ctx, "")
		if err != nil || sum.RunsRecopied != 1 || sum.RunsCopied != 0 || sum.BadRowCount != 0 {
			t.Fatalf("Up = %+v, %v; want run-a1 copied again", sum, err)
		}
		if r := f.readRuns(t)["run-a1"]; r.Status != "COMPLETED" || r.Data.(map[string]any)["content"] != "done" {
			t.Errorf("run-a1 = %+v; want the 2.x process's COMPLETED version", r)
		}
		for _, id := range []string{"run-a2", "run-b1"} {
			if r := f.rawRun(t, id); r != before[id] {
				t.Errorf("%s was rewritten: %+v, was %+v", id, r, before[id])
			}
		}
		if sum, err := m.Up(ctx, ""); err != nil || sum.RunsRecopied != 0 || sum.RunsCopied != 0 {
			t.Fatalf("third Up = %+v, %v; want nothing to copy", sum, err)
		}
		if st := statusOf(t, m, migrate.KindSessions); st.UncopiedRuns != 0 || st.ChangedRuns != 0 {
			t.Fatalf("status after Up = %+v; want nothing uncopied", st.Uncopied)
		}
		if res, err := m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true}); err != nil || !res.Dropped {
			t.Fatalf("cleanup after Up = %+v, %v", res, err)
		}
	})
}

// A run both the 2.x process (in the legacy column) and Agentry (in the
// runs table) changed after Up is a conflict: Up overwrites neither, records
// it as a bad row, and cleanup refuses to drop it. A run only Agentry
// changed is not a conflict: its legacy copy is older.
func TestUp_RunChangedOnBothSidesIsAConflict(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		a1 := element("run-a1", "s-a", "PAUSED", "")
		b1 := element("run-b1", "s-b", "PAUSED", "")
		f.insert(t, []migratetest.Session{legacyAgentSession("s-a", "["+a1+"]"), legacyAgentSession("s-b", "["+b1+"]")})
		m := f.manager(t)
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		f.agentryWrites(t, "run-a1", "CANCELLED", element("run-a1", "s-a", "CANCELLED", `, "content": "agentry"`))
		f.agentryWrites(t, "run-b1", "COMPLETED", element("run-b1", "s-b", "COMPLETED", `, "content": "agentry"`))
		f.setLegacyRuns(t, "s-a", "["+element("run-a1", "s-a", "COMPLETED", `, "content": "2.x"`)+"]")
		rowA, rowB := f.rawRun(t, "run-a1"), f.rawRun(t, "run-b1")

		if st := statusOf(t, m, migrate.KindSessions); st.UncopiedRuns != 1 || st.ChangedRuns != 1 || len(st.UncopiedExamples) != 1 || st.UncopiedExamples[0] != "s-a" {
			t.Fatalf("status = %+v; want run-a1 of s-a only", st.Uncopied)
		}
		sum, err := m.Up(ctx, "")
		if err != nil || sum.RunsRecopied != 0 || sum.BadRowCount != 1 {
			t.Fatalf("Up = %+v, %v; want one bad row", sum, err)
		}
		if b := sum.BadRows[0]; b.SessionID != "s-a" || b.Position != 0 || b.Kind != migrate.BadRunEditedBothSides {
			t.Errorf("bad row = %+v; want s-a #0 %s", b, migrate.BadRunEditedBothSides)
		}
		if r := f.rawRun(t, "run-a1"); r != rowA {
			t.Errorf("run-a1 = %+v; Up overwrote Agentry's %+v", r, rowA)
		}
		if r := f.rawRun(t, "run-b1"); r != rowB {
			t.Errorf("run-b1 = %+v; Up overwrote Agentry's %+v", r, rowB)
		}
		if st := statusOf(t, m, migrate.KindSessions); st.BadRowsRecorded != 1 {
			t.Errorf("status = %+v; want the conflict recorded", st)
		}
		res, err := m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true})
		if !errors.Is(err, migrate.ErrUncopiedRuns) || res.Dropped || res.UncopiedRuns != 1 {
			t.Fatalf("cleanup = %+v, %v; want ErrUncopiedRuns", res, err)
		}

		// Keeping the runs table's version: the element leaves the column.
		f.setLegacyRuns(t, "s-a", "[]")
		if sum, err := m.Up(ctx, ""); err != nil || sum.BadRowCount != 0 {
			t.Fatalf("Up after the fix = %+v, %v", sum, err)
		}
		if res, err := m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true}); err != nil || !res.Dropped {
			t.Fatalf("cleanup after the fix = %+v, %v", res, err)
		}
	})
}

// Runs copied before the copy recorded what it wrote (an Up of an earlier
// release) have no record: a legacy element that differs from a row not
// written since its copy is copied again, and one that differs from a row
// written since is a conflict (which side changed is unknown).
func TestUp_ChangedRunsWithoutCopyRecord(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{legacyAgentSession("s-a", "["+element("run-a1", "s-a", "PAUSED", "")+", "+element("run-a2", "s-a", "PAUSED", "")+", "+
			element("run-a3", "s-a", "COMPLETED", "")+"]")})
		m := f.manager(t)
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		f.exec(t, "DROP TABLE "+f.table("agno_migration_copied_runs"))
		a3 := f.rawRun(t, "run-a3")
		f.agentryWrites(t, "run-a2", "CANCELLED", element("run-a2", "s-a", "CANCELLED", ""))
		f.setLegacyRuns(t, "s-a", "["+element("run-a1", "s-a", "COMPLETED", "")+", "+element("run-a2", "s-a", "COMPLETED", "")+", "+
			element("run-a3", "s-a", "COMPLETED", "")+"]")

		if st := statusOf(t, m, migrate.KindSessions); st.UncopiedRuns != 2 || st.ChangedRuns != 2 {
			t.Fatalf("status = %+v; want 2 changed runs", st.Uncopied)
		}
		sum, err := m.Up(ctx, "")
		if err != nil || sum.RunsRecopied != 1 || sum.BadRowCount != 1 || sum.BadRows[0].Kind != migrate.BadRunEditedBothSides {
			t.Fatalf("Up = %+v, %v; want run-a1 copied again and run-a2 a conflict", sum, err)
		}
		if s := f.rawRun(t, "run-a1").Status; s != "COMPLETED" {
			t.Errorf("run-a1 status = %s, want COMPLETED", s)
		}
		if s := f.rawRun(t, "run-a2").Status; s != "CANCELLED" {
			t.Errorf("run-a2 status = %s: Agentry's write was overwritten", s)
		}
		if r := f.rawRun(t, "run-a3"); r != a3 {
			t.Errorf("run-a3 was rewritten: %+v, was %+v", r, a3)
		}
	})
}
