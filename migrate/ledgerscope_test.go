package migrate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// cloneSessions creates another, empty 2.x sessions table of the fixture's
// layout, and inserts sessions into it.
func (f *fixtureDB) cloneSessions(t *testing.T, name string, sessions []migratetest.Session) {
	t.Helper()
	switch f.dialect {
	case sqliteName:
		var ddl string
		if err := f.db.QueryRow("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'agno_sessions'").Scan(&ddl); err != nil {
			t.Fatal(err)
		}
		f.exec(t, strings.Replace(ddl, `"agno_sessions"`, `"`+name+`"`, 1))
	case postgresName:
		f.exec(t, "CREATE TABLE "+f.table(name)+" (LIKE "+f.table("agno_sessions")+" INCLUDING ALL)")
	case mysqlName:
		f.exec(t, "CREATE TABLE "+f.table(name)+" LIKE agno_sessions")
	}
	l := f.layout
	l.SessionsTable = name
	if err := migratetest.Insert(context.Background(), f.db, l, migratetest.All(sessions)); err != nil {
		t.Fatal(err)
	}
}

// twoDeployments makes the fixture hold two deployments, both migrated:
// sessions table agno_sessions (session s-a holding aRuns, elements of
// s-a) and other_sessions (session s-x holding run-x1 and run-x2). It
// returns their managers.
func (f *fixtureDB) twoDeployments(t *testing.T, ctx context.Context, aRuns ...string) (a, b *migrate.Manager) {
	t.Helper()
	f.insert(t, []migratetest.Session{legacyAgentSession("s-a", "["+strings.Join(aRuns, ", ")+"]")})
	f.cloneSessions(t, "other_sessions", []migratetest.Session{
		legacyAgentSession("s-x", "["+element("run-x1", "s-x", "COMPLETED", "")+", "+element("run-x2", "s-x", "COMPLETED", "")+"]")})
	a = f.manager(t)
	b = f.manager(t, func(c *migrate.Config) { c.Tables.Sessions = "other_sessions" })
	for _, m := range []*migrate.Manager{a, b} {
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
	}
	return a, b
}

// holdsRun reports whether a runs table holds a run.
func (f *fixtureDB) holdsRun(t *testing.T, table, runID string) bool {
	t.Helper()
	var n int
	if err := f.db.QueryRow("SELECT count(*) FROM " + f.table(table) + " WHERE run_id = '" + runID + "'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// Two deployments in one database (sessions tables agno_sessions and
// other_sessions, runs tables agno_runs and other_sessions_runs) share the
// copied-runs table. Its records belong to the runs table they describe:
// one deployment's Down clears its own, and the other's run deleted after
// its copy stays deleted (its record kept), instead of coming back with the
// other's next Up.
func TestDown_KeepsAnotherDeploymentsCopyRecords(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		a, b := f.twoDeployments(t, ctx, element("run-a1", "s-a", "COMPLETED", ""))
		f.execArgs(t, "DELETE FROM "+f.table("other_sessions_runs")+" WHERE run_id = ?", "run-x1") // through Agentry's API
		if _, err := a.Down(ctx, "2.5.6"); err != nil {
			t.Fatal(err)
		}
		if st := statusOf(t, b, migrate.KindSessions); st.UncopiedRuns != 0 {
			t.Errorf("other_sessions's status after agno_sessions's Down = %+v; want nothing uncopied (run-x1 was deleted after its copy)", st.Uncopied)
		}
		sum, err := b.Up(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if f.holdsRun(t, "other_sessions_runs", "run-x1") {
			t.Fatalf("other_sessions's Up after agno_sessions's Down copied back the deleted run-x1 (summary %+v)", sum)
		}
		// agno_sessions's Down cleared its own records: its Up copies
		// its runs into the runs table it creates again.
		if sum, err := a.Up(ctx, ""); err != nil || sum.RunsCopied != 1 {
			t.Fatalf("agno_sessions's Up after its Down = %+v, %v; want run-a1 copied", sum, err)
		}
	})
}

// oldLedger turns the fixture's copied-runs table into the layout of the
// releases before records were scoped (keyed by run_id alone), keeping its
// records.
func (f *fixtureDB) oldLedger(t *testing.T) {
	t.Helper()
	key, big, suffix := "TEXT", "INTEGER", ""
	switch f.dialect {
	case postgresName:
		key, big = "VARCHAR", "BIGINT"
	case mysqlName:
		key, big, suffix = "VARCHAR(255)", "BIGINT", " DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
	}
	ledger, tmp := f.table("agno_migration_copied_runs"), f.table("old_ledger_tmp")
	f.exec(t, "CREATE TABLE "+tmp+" (run_id "+key+" NOT NULL, digest "+big+" NOT NULL, updated_at "+big+" NOT NULL, row_digest "+big+")"+suffix,
		"INSERT INTO "+tmp+" SELECT run_id, digest, updated_at, row_digest FROM "+ledger,
		"DROP TABLE "+ledger,
		"CREATE TABLE "+ledger+" (run_id "+key+" NOT NULL PRIMARY KEY, digest "+big+" NOT NULL, updated_at "+big+" NOT NULL, row_digest "+big+")"+suffix,
		"INSERT INTO "+ledger+" SELECT run_id, digest, updated_at, row_digest FROM "+tmp,
		"DROP TABLE "+tmp)
}

// A copy an earlier release left half done, with copy records keyed by
// run_id alone, resumes: Up scopes the records to its runs table and still
// honours them (a run deleted after its copy stays deleted), copies the
// sessions past the checkpoint, and the next deployment's Down no longer
// clears them.
func TestUp_ResumesWithCopyRecordsOfAnEarlierRelease(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{
			legacyAgentSession("s-a", "["+element("run-a1", "s-a", "COMPLETED", "")+", "+element("run-a2", "s-a", "COMPLETED", "")+"]"),
			legacyAgentSession("s-b", "["+element("run-b1", "s-b", "COMPLETED", "")+"]"),
			legacyAgentSession("s-c", "["+element("run-c1", "s-c", "COMPLETED", "")+"]"),
		})
		m := f.manager(t)
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		// As an earlier release leaves a copy stopped after s-b's batch:
		// sessions stamped below 3.0.0, a checkpoint, s-c not copied
		// (no row, no record), and a run deleted after its copy.
		f.oldLedger(t)
		runs, ledger := f.table("agno_runs"), f.table("agno_migration_copied_runs")
		f.execArgs(t, "DELETE FROM "+runs+" WHERE run_id IN (?, ?)", "run-c1", "run-a1")
		f.execArgs(t, "DELETE FROM "+ledger+" WHERE run_id = ?", "run-c1")
		f.execArgs(t, "UPDATE "+f.table("agno_schema_versions")+" SET version = ? WHERE table_name = ?", "2.5.6", "agno_sessions")
		f.execArgs(t, "INSERT INTO "+f.table("agno_migration_progress")+" (table_name, step, last_session_id, sessions_done, runs_copied, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
			"agno_sessions", "3.0.0", "s-b", 2, 3, 1700000000)

		// A dry run reads the earlier release's table as it is.
		dry := f.manager(t, func(c *migrate.Config) { c.DryRun = true })
		if sum, err := dry.Up(ctx, ""); err != nil || sum.RunsCopied != 1 || sum.BadRowCount != 0 {
			t.Fatalf("dry run of the resumed Up = %+v, %v; want run-c1 alone to copy", sum, err)
		}
		sum, err := m.Up(ctx, "")
		if err != nil || sum.RunsCopied != 1 {
			t.Fatalf("resumed Up = %+v, %v; want run-c1 copied, run-a1 left deleted", sum, err)
		}
		got := f.readRuns(t)
		if _, ok := got["run-a1"]; ok {
			t.Fatal("the resumed Up copied back run-a1, deleted after its copy by the earlier release")
		}
		if _, ok := got["run-c1"]; !ok {
			t.Fatal("the resumed Up did not copy run-c1")
		}
		if cols := f.columns(t, "agno_migration_copied_runs"); !cols["runs_table"] {
			t.Fatalf("copied-runs columns after Up: %v; want them scoped by runs_table", cols)
		}
		if st := statusOf(t, m, migrate.KindSessions); st.UncopiedRuns != 0 || st.CopyCheckpoint != "" {
			t.Fatalf("status after the resumed Up = %+v; want nothing uncopied, no checkpoint", st)
		}

		// Another deployment's Down leaves these records alone now.
		f.cloneSessions(t, "other_sessions", []migratetest.Session{legacyAgentSession("s-x", "["+element("run-x1", "s-x", "COMPLETED", "")+"]")})
		other := f.manager(t, func(c *migrate.Config) { c.Tables.Sessions = "other_sessions" })
		if _, err := other.Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := other.Down(ctx, "2.5.6"); err != nil {
			t.Fatal(err)
		}
		if sum, err := m.Up(ctx, ""); err != nil || sum.RunsCopied != 0 {
			t.Fatalf("Up after another deployment's Down = %+v, %v; want nothing copied (run-a1 stays deleted)", sum, err)
		}
	})
}

// Copy records an earlier release wrote (keyed by run_id alone) are
// unscoped after the upgrade until each deployment's first Up claims its
// own. One deployment's Down clears those it can prove are its own (the
// runs of its legacy column) and leaves the rest: the other deployment,
// which has not run Up since the upgrade, keeps its run deleted after its
// copy deleted, instead of getting it back with its next Up.
func TestDown_KeepsAnotherDeploymentsUnscopedCopyRecords(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		a, b := f.twoDeployments(t, ctx, element("run-a1", "s-a", "COMPLETED", ""), element("run-a2", "s-a", "COMPLETED", ""))
		// As the earlier release left them: every record unscoped. Then
		// a run of each deployment is deleted through Agentry's API.
		f.oldLedger(t)
		f.execArgs(t, "DELETE FROM "+f.table("other_sessions_runs")+" WHERE run_id = ?", "run-x1")
		f.execArgs(t, "DELETE FROM "+f.table("agno_runs")+" WHERE run_id = ?", "run-a2")
		if _, err := a.Down(ctx, "2.5.6"); err != nil {
			t.Fatal(err)
		}
		if got := f.legacyColumn(t, "s-a"); strings.Contains(got, "run-a2") || !strings.Contains(got, "run-a1") {
			t.Fatalf("s-a's legacy runs after Down = %s; want run-a1 without run-a2 (deleted after its copy)", got)
		}
		sum, err := b.Up(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if f.holdsRun(t, "other_sessions_runs", "run-x1") {
			t.Fatalf("other_sessions's Up after agno_sessions's Down copied back run-x1, deleted after its copy (summary %+v)", sum)
		}
		// agno_sessions's Down cleared its own unscoped records: its Up
		// copies run-a1 into the runs table it creates again.
		if sum, err := a.Up(ctx, ""); err != nil || sum.RunsCopied != 1 {
			t.Fatalf("agno_sessions's Up after its Down = %+v, %v; want run-a1 copied", sum, err)
		}
		if _, ok := f.readRuns(t)["run-a1"]; !ok {
			t.Fatal("agno_runs lacks run-a1 after agno_sessions's Down and Up")
		}
	})
}
