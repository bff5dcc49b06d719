package migrate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/migrate"
)

// tableCount counts the tables of the fixture's database (its schema on
// Postgres).
func (f *fixtureDB) tableCount(t *testing.T) int {
	t.Helper()
	q := "SELECT count(*) FROM sqlite_master WHERE type = 'table'"
	var args []any
	switch f.dialect {
	case postgresName:
		q, args = "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1", []any{f.layout.Schema}
	case mysqlName:
		q = "SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE()"
	}
	var n int
	if err := f.db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The drivers and migrate refuse the same table names, before touching the
// database: a name holding a dot (quoted as one identifier, it named a
// table the schema lacks) and two names equal but for case (one table to
// SQLite: the runs table "agno_sessions" was the sessions table
// "Agno_Sessions"). A driver that took them created tables migrate then
// refused to migrate, or, on SQLite, found its sessions table lacking the
// runs table's columns.
func TestDriversAndNew_RefuseTheSameTableNames(t *testing.T) {
	t.Parallel()
	refused := []struct {
		name   string
		tables migrate.Tables
		want   []string // in the error
	}{
		{"runs named as sessions but for case", migrate.Tables{Sessions: "Agno_Sessions", Runs: "agno_sessions"}, []string{`"Agno_Sessions"`, `"agno_sessions"`, "case"}},
		{"runs named as sessions", migrate.Tables{Runs: "agno_sessions"}, []string{`"agno_sessions"`, "sessions", "runs"}},
		{"memories named as the default runs but for case", migrate.Tables{Memories: "AGNO_RUNS"}, []string{`"agno_runs"`, `"AGNO_RUNS"`, "case"}},
		{"copied runs named as the errors table but for case", migrate.Tables{CopiedRuns: "Agno_Migration_Errors"}, []string{`"agno_migration_errors"`, `"Agno_Migration_Errors"`}},
		{"dotted sessions", migrate.Tables{Sessions: "ai.agno_sessions"}, []string{`"ai.agno_sessions"`, "dot", "schema"}},
		{"dotted metrics", migrate.Tables{Metrics: "agno.metrics"}, []string{`"agno.metrics"`, "dot"}},
	}
	for _, dialect := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			f := newEmptyFixture(t, dialect)
			for _, c := range refused {
				d, err := f.openDriverTables(t, c.tables)
				if err == nil {
					d.Close()
					t.Fatalf("%s: the driver opened with tables %+v; want a refusal", c.name, c.tables)
				}
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("%s: the driver's refusal %q does not say %q", c.name, err, w)
					}
				}
				if !errors.Is(err, db.ErrInvalidConfig) {
					t.Fatalf("%s: the driver's refusal %q is not db.ErrInvalidConfig", c.name, err)
				}
				_, err = migrate.New(migrate.Config{DB: f.db, Dialect: sqlDialect(f.dialect, f.layout.Schema), Tables: c.tables})
				if err == nil || !strings.Contains(err.Error(), c.want[0]) || !errors.Is(err, db.ErrInvalidConfig) {
					t.Fatalf("%s: migrate.New = %v; want a refusal naming %s that is db.ErrInvalidConfig", c.name, err, c.want[0])
				}
			}
			if n := f.tableCount(t); n != 0 {
				t.Fatalf("the refused opens left %d tables; want none", n)
			}
			// Names apart by more than case open.
			d, err := f.openDriverTables(t, migrate.Tables{Sessions: "Agno_Sessions", Runs: "agno_sessions_runs"})
			if err != nil {
				t.Fatalf("the driver refused tables named apart: %v", err)
			}
			d.Close()
		})
	}
}
