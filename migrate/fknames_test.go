package migrate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// InnoDB compares foreign-key names ignoring case, database-wide, while
// table names are case-sensitive (lower_case_table_names=0): the runs
// tables agno_runs and AGNO_RUNS would both declare fk_{runs}_session_id,
// and the second CREATE TABLE failed with errno 121 ("duplicate key on write
// or update") halfway through Up. Up, and its dry run, refuse such a
// configuration up front, naming both tables, before changing anything.
func TestUp_MySQLForeignKeyNamesDifferingOnlyInCaseAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, variants[5]) // mysql/2.5.6
	f.insert(t, []migratetest.Session{legacyAgentSession("s-1", "["+run("run-1", "s-1", "")+"]")})
	if _, err := f.manager(t).Up(ctx, ""); err != nil {
		t.Fatal(err)
	}
	f.exec(t, "CREATE TABLE AGNO_SESSIONS LIKE agno_sessions",
		`INSERT INTO AGNO_SESSIONS (session_id, session_type, runs, created_at) VALUES ('s-2', 'agent', '[{"run_id": "run-2", "agent_id": "a1", "status": "COMPLETED", "created_at": 1700000000}]', 1700000000)`)
	upper := func(c *migrate.Config) { c.Tables.Sessions, c.Tables.Runs = "AGNO_SESSIONS", "AGNO_RUNS" }
	for _, dry := range []bool{true, false} {
		m := f.manager(t, upper, func(c *migrate.Config) { c.DryRun = dry })
		_, err := m.Up(ctx, "")
		if err == nil || !strings.Contains(err.Error(), "fk_AGNO_RUNS_session_id") || !strings.Contains(err.Error(), "agno_runs") ||
			!strings.Contains(err.Error(), "differ") {
			t.Fatalf("Up (dry run %v) of runs table AGNO_RUNS next to agno_runs = %v; want a refusal naming the colliding foreign key and agno_runs", dry, err)
		}
	}
	var n int
	if err := f.db.QueryRow("SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND BINARY table_name = 'AGNO_RUNS'").Scan(&n); err != nil || n != 0 {
		t.Fatalf("AGNO_RUNS exists after the refusal (%d, %v)", n, err)
	}
	if st := statusOf(t, f.manager(t, upper), migrate.KindSessions); st.Current != "2.0.0" || st.RowsWithRuns != 1 {
		t.Fatalf("AGNO_SESSIONS after the refusal: %+v; want unchanged, with its legacy run", st)
	}
	// A runs table named apart by more than case migrates.
	m := f.manager(t, func(c *migrate.Config) { c.Tables.Sessions, c.Tables.Runs = "AGNO_SESSIONS", "AGNO_RUNS_2" })
	if sum, err := m.Up(ctx, ""); err != nil || sum.RunsCopied != 1 {
		t.Fatalf("Up into AGNO_RUNS_2 = %+v, %v; want its run copied", sum, err)
	}
}
