package sqlite_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db/sqlite"
)

// SQLite resolves table and index names ignoring (ASCII) case: a table
// created as Agno_Sessions is the one a statement names agno_sessions or
// AGNO_SESSIONS, and CREATE TABLE IF NOT EXISTS AGNO_SESSIONS does nothing.
// The catalog look-ups answer the same, or a caller takes an existing table
// for a missing one (migrate stamped a 2.x sessions table 3.0.0 without
// copying its runs that way).
func TestCatalog_NamesIgnoreCaseAsSQLiteDoes(t *testing.T) {
	t.Parallel()
	conn, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, s := range []string{`CREATE TABLE "Agno_Sessions" (session_id TEXT PRIMARY KEY, user_id TEXT)`,
		`CREATE INDEX "Idx_Agno_Sessions_User_ID" ON "Agno_Sessions" (user_id)`} {
		if _, err := conn.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	cat := sqlite.Dialect().Catalog
	count := func(q string, args []any) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, name := range []string{"Agno_Sessions", "agno_sessions", "AGNO_SESSIONS"} {
		if q, args := cat.Tables(name); count(q, args) != 1 {
			t.Errorf("Catalog.Tables(%q) finds no table; SQLite resolves it to Agno_Sessions", name)
		}
	}
	for _, name := range []string{"Idx_Agno_Sessions_User_ID", "idx_agno_sessions_user_id"} {
		if q, args := cat.Indexes("agno_sessions", name); count(q, args) != 1 {
			t.Errorf("Catalog.Indexes(%q) finds no index; SQLite resolves it to Idx_Agno_Sessions_User_ID", name)
		}
	}
	if q, args := cat.Tables("agno_runs"); count(q, args) != 0 {
		t.Error("Catalog.Tables(agno_runs) finds a table the database lacks")
	}
}
