package migrate_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// collation reads a MySQL column's collation.
func (f *fixtureDB) collation(t *testing.T, table, column string) string {
	t.Helper()
	var c string
	if err := f.db.QueryRow("SELECT collation_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ? AND column_name = ?",
		table, column).Scan(&c); err != nil {
		t.Fatalf("collation of %s.%s: %v", table, column, err)
	}
	return c
}

// On MySQL the bookkeeping tables compare ids byte for byte, as the runs
// and (after Up) sessions tables do: bad rows of sessions "s-Case" and
// "s-case" at the same position are two records, and fixing one clears only
// its own. Tables an earlier release made with the server's
// case-insensitive default are converted by Up.
func TestUp_MySQLBookkeepingKeysAreCaseSensitive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, variants[4]) // mysql
	noID := `[{"agent_id": "a1", "status": "COMPLETED"}]`
	f.insert(t, []migratetest.Session{legacyAgentSession("s-Case", noID)})
	m := f.manager(t)
	if sum, err := m.Up(ctx, ""); err != nil || sum.BadRowCount != 1 {
		t.Fatalf("Up = %+v, %v; want one bad row", sum, err)
	}
	// The tables as an earlier release made them, with its records.
	f.exec(t, "DROP TABLE agno_migration_errors", "DROP TABLE agno_migration_progress",
		"CREATE TABLE agno_migration_errors (table_name VARCHAR(255) NOT NULL, session_id VARCHAR(255) NOT NULL, position BIGINT NOT NULL, kind VARCHAR(255) NOT NULL, "+
			"detail TEXT, created_at BIGINT NOT NULL, PRIMARY KEY (table_name, session_id, position)) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
		"CREATE TABLE agno_migration_progress (table_name VARCHAR(255) NOT NULL PRIMARY KEY, step VARCHAR(255) NOT NULL, last_session_id VARCHAR(255) NOT NULL, "+
			"sessions_done BIGINT NOT NULL, runs_copied BIGINT NOT NULL, updated_at BIGINT NOT NULL, deferred_ddl TEXT) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_general_ci",
		"INSERT INTO agno_migration_errors VALUES ('agno_sessions', 's-Case', 0, 'missing_run_id', 'no run_id', 1700000000)")
	f.insert(t, []migratetest.Session{legacyAgentSession("s-case", noID)})

	sum, err := m.Up(ctx, "")
	if err != nil || sum.BadRowCount != 2 {
		t.Fatalf("Up = %+v, %v; want the bad rows of both sessions", sum, err)
	}
	if st := statusOf(t, m, migrate.KindSessions); st.BadRowsRecorded != 2 {
		t.Fatalf("recorded bad rows = %d, want 2 (s-Case and s-case)", st.BadRowsRecorded)
	}
	for _, tc := range [][2]string{{"agno_migration_errors", "session_id"}, {"agno_migration_progress", "last_session_id"}, {"agno_migration_copied_runs", "run_id"}} {
		if c := f.collation(t, tc[0], tc[1]); c != "utf8mb4_bin" {
			t.Errorf("%s.%s collation = %s, want utf8mb4_bin", tc[0], tc[1], c)
		}
	}

	// Fixing s-case clears its record only.
	f.setLegacyRuns(t, "s-case", "[]")
	if sum, err := m.Up(ctx, ""); err != nil || sum.BadRowCount != 1 || sum.BadRows[0].SessionID != "s-Case" {
		t.Fatalf("Up after fixing s-case = %+v, %v; want s-Case's bad row only", sum, err)
	}
	if st := statusOf(t, m, migrate.KindSessions); st.BadRowsRecorded != 1 {
		t.Fatalf("recorded bad rows = %d, want 1 (s-Case)", st.BadRowsRecorded)
	}
}

// On MySQL the versions table Up creates (a 2.0.0 database Agno made
// without one) compares table names byte for byte, as the one the drivers
// create: with lower_case_table_names=0, agno_sessions and AGNO_SESSIONS
// are two tables, and their stamps are two rows, neither taken for the
// other.
func TestUp_MySQLVersionsTableItCreatesKeysNamesExactly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, variants[4]) // mysql, 2.0.0: no versions table
	f.insert(t, []migratetest.Session{legacyAgentSession("s-1", "["+run("run-1", "s-1", "")+"]")})
	m := f.manager(t)
	if _, err := m.Up(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if c := f.collation(t, "agno_schema_versions", "table_name"); c != "utf8mb4_bin" {
		t.Errorf("agno_schema_versions.table_name collation = %s, want utf8mb4_bin", c)
	}
	// Another deployment's tables, named in upper case, stamped at 2.5.6.
	f.exec(t, "INSERT INTO agno_schema_versions (table_name, version, created_at) VALUES ('AGNO_SESSIONS', '2.5.6', '2026-01-01T00:00:00Z')")
	var v string
	if err := f.db.QueryRow("SELECT version FROM agno_schema_versions WHERE table_name = 'AGNO_SESSIONS'").Scan(&v); err != nil || v != "2.5.6" {
		t.Fatalf("AGNO_SESSIONS's stamp = %q, %v; want 2.5.6", v, err)
	}
	if st := statusOf(t, m, migrate.KindSessions); st.Current != migrate.Latest {
		t.Fatalf("agno_sessions is at %s after another table's stamp, want %s", st.Current, migrate.Latest)
	}
}

// A versions table Agno created on MySQL is case-insensitive
// (utf8mb4_general_ci). Up converts it to compare table names byte for
// byte: migrating a second deployment whose sessions table is named
// AGNO_SESSIONS must not restamp agno_sessions, whose runs are still in its
// legacy column.
func TestUp_MySQLAgnoVersionsTableKeysNamesExactly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, variants[5]) // mysql, 2.5.6: Agno's versions table
	if c := f.collation(t, "agno_schema_versions", "table_name"); c == "utf8mb4_bin" {
		t.Fatalf("fixture's versions table is already binary; the test needs Agno's case-insensitive one")
	}
	f.insert(t, []migratetest.Session{legacyAgentSession("s-1", "["+run("run-1", "s-1", "")+"]")})
	f.exec(t, "CREATE TABLE AGNO_SESSIONS LIKE agno_sessions")
	// Its runs table's name differs from agno_runs by more than case:
	// InnoDB's foreign key names (fk_{runs}_session_id) ignore case.
	upper := f.manager(t, func(c *migrate.Config) { c.Tables.Sessions, c.Tables.Runs = "AGNO_SESSIONS", "AGNO_SESSIONS_RUNS" })
	if _, err := upper.Up(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if c := f.collation(t, "agno_schema_versions", "table_name"); c != "utf8mb4_bin" {
		t.Errorf("agno_schema_versions.table_name collation = %s, want utf8mb4_bin", c)
	}
	lower := f.manager(t)
	st := statusOf(t, lower, migrate.KindSessions)
	if st.Current != "2.5.6" || !st.LegacyRunsColumn || st.RowsWithRuns != 1 {
		t.Fatalf("agno_sessions after AGNO_SESSIONS's Up: %+v; want still 2.5.6 with its legacy run", st)
	}
	if _, err := lower.Up(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if got := f.readRuns(t); len(got) != 1 {
		t.Fatalf("agno_runs holds %d runs after agno_sessions's Up, want 1", len(got))
	}
	if st := statusOf(t, upper, migrate.KindSessions); st.Current != migrate.Latest {
		t.Fatalf("AGNO_SESSIONS is at %s, want %s", st.Current, migrate.Latest)
	}
}
