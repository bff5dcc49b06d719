package migrate_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// SQLite names tables case-insensitively: a sessions table configured as
// AGNO_SESSIONS is Agno's agno_sessions. Up copies its legacy runs instead
// of taking it for a missing table, "creating" it (a no-op) and stamping it
// 3.0.0 with every run left in the legacy column.
func TestUp_SQLiteTableNamesIgnoreCase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, variants[1]) // sqlite/2.5.6
	f.insert(t, []migratetest.Session{legacyAgentSession("s-1", "["+run("run-1", "s-1", "")+"]")})
	m := f.manager(t, func(c *migrate.Config) { c.Tables.Sessions, c.Tables.Runs = "AGNO_SESSIONS", "agno_runs" })
	st := statusOf(t, m, migrate.KindSessions)
	if !st.Exists || !st.LegacyRunsColumn || st.RowsWithRuns != 1 {
		t.Fatalf("status of AGNO_SESSIONS = %+v; want agno_sessions's, with its legacy run", st)
	}
	sum, err := m.Up(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if sum.RunsCopied != 1 {
		t.Fatalf("Up copied %d runs, want 1", sum.RunsCopied)
	}
	if got := f.readRuns(t); len(got) != 1 {
		t.Fatalf("agno_runs holds %d runs, want 1", len(got))
	}
}
