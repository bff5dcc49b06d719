package migrate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// A sessions table from before 2.5.0 gets session_id as its primary key in
// Up's 2.5.0 step, which the server refuses while two rows share a
// session_id (or one has none). The dry run says so, naming a duplicate,
// instead of planning "add primary key"; Up refuses with the same words
// before it changes the table.
func TestUp_DryRunPredictsTheSessionsPrimaryKeyFailing(t *testing.T) {
	onEachBackend(t, []variant{variants[2], variants[4]}, func(t *testing.T, ctx context.Context, f *fixtureDB) { // postgres/json/2.0.0, mysql/2.0.0
		drop := "ALTER TABLE " + f.table("agno_sessions") + " DROP CONSTRAINT agno_sessions_uq_session_id"
		if f.dialect == mysqlName {
			drop = "ALTER TABLE agno_sessions DROP INDEX agno_sessions_uq_session_id"
		}
		f.exec(t, drop)
		f.insert(t, []migratetest.Session{legacyAgentSession("s-dup", "["+run("run-1", "s-dup", "")+"]")})
		f.insert(t, []migratetest.Session{legacyAgentSession("s-dup", "["+run("run-2", "s-dup", "")+"]")})
		for _, dry := range []bool{true, false} {
			m := f.manager(t, func(c *migrate.Config) { c.DryRun = dry })
			sum, err := m.Up(ctx, "")
			if err == nil || !strings.Contains(err.Error(), "s-dup") || !strings.Contains(err.Error(), "primary key") {
				var steps []migrate.Step
				if sum != nil {
					steps = sum.Steps
				}
				t.Fatalf("Up (dry run %v) with session s-dup twice = %v (steps %+v); want a refusal naming s-dup and the primary key", dry, err, steps)
			}
		}
		if st := statusOf(t, f.manager(t), migrate.KindSessions); st.Current != "2.0.0" {
			t.Fatalf("sessions at %s after the refusal, want 2.0.0 (unchanged)", st.Current)
		}
	})
}

// MySQL/MariaDB's default collation (utf8mb4_general_ci, PAD SPACE) takes
// session ids differing in case or trailing spaces for one key, so the
// 2.5.0 step's primary key fails on them as on an exact repeat. Up refuses
// up front, and names each spelling the rows hold, as the server compares
// them (the rows cannot be found otherwise: "s-dup" alone named one of
// three).
func TestUp_MySQLSessionsKeyCheckFoldsTheCollation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, variants[4]) // mysql/2.0.0
	f.exec(t, "ALTER TABLE agno_sessions DROP INDEX agno_sessions_uq_session_id")
	for i, id := range []string{"s-dup", "S-DUP", "s-dup "} {
		f.insert(t, []migratetest.Session{legacyAgentSession(id, "["+run(fmt.Sprintf("run-%d", i), id, "")+"]")})
	}
	for _, dry := range []bool{true, false} {
		_, err := f.manager(t, func(c *migrate.Config) { c.DryRun = dry }).Up(ctx, "")
		if err == nil || !strings.Contains(err.Error(), "primary key") {
			t.Fatalf("Up (dry run %v) with s-dup, S-DUP and \"s-dup \" = %v; want a refusal naming the primary key", dry, err)
		}
		for _, want := range []string{`"s-dup"`, `"S-DUP"`, `"s-dup "`, "collation"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("Up's refusal (dry run %v) %q does not name %s", dry, err, want)
			}
		}
	}
	if st := statusOf(t, f.manager(t), migrate.KindSessions); st.Current != "2.0.0" || st.RowsWithRuns != 3 {
		t.Fatalf("sessions after the refusal: %+v; want unchanged at 2.0.0 with its three sessions' runs", st)
	}
}
