package migrate_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// Postgres cuts identifiers to 63 bytes: the runs table of a long sessions
// table name gets index names it shortens. Up and Down look the indexes up
// by the name the server gave them, so running either again finds them
// (a rerun after a crash, or Down to 3.0.0 twice) instead of creating them
// again ("already exists") or reporting a change it does not make.
func TestUpDown_PostgresLongTableNamesRerun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const sessions = "customer_support_agent_production_sessions" // runs: +"_runs", 47 bytes
	v := variants[3]                                              // postgres/jsonb/2.5.6
	f := &fixtureDB{dialect: postgresName}
	f.layout = migratetest.Layout{Dialect: "postgres", JSONType: v.jsonType, Stamp: v.stamp, SessionsTable: sessions}
	f.db, f.layout.Schema, f.dsn = migratetest.Postgres(t)
	if err := migratetest.Create(ctx, f.db, f.layout); err != nil {
		t.Fatal(err)
	}
	f.insert(t, []migratetest.Session{legacyAgentSession("s-1", "["+run("run-1", "s-1", "")+"]")})
	m := f.manager(t, func(c *migrate.Config) { c.Tables.Sessions = sessions })
	if _, err := m.Up(ctx, ""); err != nil {
		t.Fatalf("Up: %v", err)
	}
	sum, err := m.Up(ctx, "")
	if err != nil {
		t.Fatalf("Up again: %v", err)
	}
	if len(sum.Steps) != 0 {
		t.Errorf("Up of an up-to-date database plans %+v, want nothing", sum.Steps)
	}
	f.assertIndexedOn(t, sessions+"_runs", "workflow_id")
	for i := range 2 {
		if _, err := m.Down(ctx, "3.0.0"); err != nil {
			t.Fatalf("Down to 3.0.0 (#%d): %v", i+1, err)
		}
	}
	f.assertIndexedOn(t, sessions+"_runs", "workflow_id")
	if _, err := m.Up(ctx, ""); err != nil {
		t.Fatalf("Up after Down to 3.0.0: %v", err)
	}
	if sum, err := m.Up(ctx, ""); err != nil || len(sum.Steps) != 0 {
		t.Fatalf("Up again = %+v, %v; want nothing to do", sum, err)
	}
}

// assertIndexedOn fails unless a Postgres index of table leads with column.
func (f *fixtureDB) assertIndexedOn(t *testing.T, table, column string) {
	t.Helper()
	var n int
	err := f.db.QueryRow("SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND tablename = $2 AND indexdef LIKE $3",
		f.layout.Schema, table, "%("+column+")%").Scan(&n)
	if err != nil || n == 0 {
		t.Errorf("no index of %s on %s (%d, %v)", table, column, n, err)
	}
}
