package migrate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// legacyColumn returns a session's legacy runs column as text.
func (f *fixtureDB) legacyColumn(t *testing.T, sessionID string) string {
	t.Helper()
	var legacy string
	if err := f.db.QueryRow("SELECT runs FROM " + f.table("agno_sessions") + " WHERE session_id = '" + sessionID + "'").Scan(&legacy); err != nil {
		t.Fatalf("read legacy runs of %s: %v", sessionID, err)
	}
	return legacy
}

// A run deleted through Agentry's API after Up copied it stays deleted for
// 2.x after Down (and in the merged reads before it), in a session that
// keeps other runs and in one that had no other; a run a 2.x process changed
// after its copy is kept (Down does not drop a 2.x write); every other run
// is written back.
func TestDown_RunDeletedAfterCopyStaysDeleted(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		del, keep := element("run-del", "s-a", "COMPLETED", ""), element("run-keep", "s-a", "COMPLETED", "")
		edit := element("run-edit", "s-a", "COMPLETED", "")
		f.insert(t, []migratetest.Session{
			legacyAgentSession("s-a", "["+del+", "+keep+", "+edit+"]"),
			legacyAgentSession("s-b", "["+element("run-only", "s-b", "COMPLETED", "")+"]"),
			legacyAgentSession("s-c", "["+element("run-other", "s-c", "COMPLETED", "")+"]"),
		})
		m := f.manager(t)
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		d, err := f.openDriver(t)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"run-del", "run-only", "run-edit"} {
			if err := d.DeleteRun(ctx, id); err != nil {
				t.Fatalf("DeleteRun(%s): %v", id, err)
			}
		}
		d.Close()
		// A 2.x process changes run-edit after its copy.
		f.setLegacyRuns(t, "s-a", "["+del+", "+keep+", "+element("run-edit", "s-a", "COMPLETED", `, "content": "again"`)+"]")

		for sid, want := range map[string][]string{"s-a": {"run-keep", "run-edit"}, "s-b": nil, "s-c": {"run-other"}} {
			runs, err := m.MergedSessionRuns(ctx, sid)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range runs {
				got = append(got, r.RunID)
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("MergedSessionRuns(%s) = %v, want %v", sid, got, want)
			}
		}

		if _, err := m.Down(ctx, "2.5.6"); err != nil {
			t.Fatalf("down: %v", err)
		}
		a, b, c := f.legacyColumn(t, "s-a"), f.legacyColumn(t, "s-b"), f.legacyColumn(t, "s-c")
		if strings.Contains(a, "run-del") || strings.Contains(b, "run-only") {
			t.Errorf("down wrote deleted runs back: s-a = %s, s-b = %s", a, b)
		}
		if !strings.Contains(a, "run-keep") || !strings.Contains(a, "again") || !strings.Contains(c, "run-other") {
			t.Errorf("down lost runs: s-a = %s, s-c = %s; want run-keep, the changed run-edit and run-other", a, c)
		}

		// Up again copies what 2.x holds, and nothing deleted comes back.
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		runs := f.readRuns(t)
		for _, id := range []string{"run-del", "run-only"} {
			if _, ok := runs[id]; ok {
				t.Errorf("Up after down copied the deleted %s back", id)
			}
		}
		if len(runs) != 3 {
			t.Errorf("runs after down and up = %d, want 3 (run-keep, run-edit, run-other)", len(runs))
		}
	})
}

// Down counts the deleted runs it leaves out of the legacy column, and its
// dry run counts the same (sessions to rebuild included: one whose only
// run was deleted) without writing.
func TestDown_DryRunCountsDeletedRunsLeftOut(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{
			legacyAgentSession("s-a", "["+element("run-del", "s-a", "COMPLETED", "")+", "+element("run-keep", "s-a", "COMPLETED", "")+"]"),
			legacyAgentSession("s-b", "["+element("run-only", "s-b", "COMPLETED", "")+"]"),
			legacyAgentSession("s-c", "["+element("run-edit", "s-c", "COMPLETED", "")+"]"),
		})
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		f.exec(t, "DELETE FROM "+f.table("agno_runs")+" WHERE run_id IN ('run-del', 'run-only', 'run-edit')")
		// A 2.x process changes run-edit after its deletion: Down keeps it.
		f.setLegacyRuns(t, "s-c", "["+element("run-edit", "s-c", "COMPLETED", `, "content": "again"`)+"]")
		before := f.legacyColumn(t, "s-a") + f.legacyColumn(t, "s-b")

		dry, err := f.manager(t, func(c *migrate.Config) { c.DryRun = true }).Down(ctx, "2.5.6")
		if err != nil || dry.DeletedRunsLeftOut != 2 || dry.SessionsRebuilt != 2 || dry.RunsRestored != 1 {
			t.Fatalf("dry Down = %+v, %v; want 2 deleted runs left out of 2 sessions, 1 run restored", dry, err)
		}
		if after := f.legacyColumn(t, "s-a") + f.legacyColumn(t, "s-b"); after != before {
			t.Fatalf("the dry run wrote the legacy column: %s, was %s", after, before)
		}
		sum, err := f.manager(t).Down(ctx, "2.5.6")
		if err != nil || sum.DeletedRunsLeftOut != dry.DeletedRunsLeftOut || sum.SessionsRebuilt != dry.SessionsRebuilt || sum.RunsRestored != dry.RunsRestored {
			t.Fatalf("Down = %+v, %v; want the dry run's counts %+v", sum, err, dry)
		}
		if a, b := f.legacyColumn(t, "s-a"), f.legacyColumn(t, "s-b"); strings.Contains(a, "run-del") || strings.Contains(b, "run-only") {
			t.Errorf("down wrote deleted runs back: s-a = %s, s-b = %s", a, b)
		}
	})
}
