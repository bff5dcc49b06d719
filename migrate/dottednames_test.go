package migrate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// The dialect names the schema (postgres.Dialect(schema)); a table name
// holding a dot was quoted as one name, so "schema.agno_sessions" was taken
// for a table the schema lacks and Up created new, empty tables next to the
// 2.x ones. New refuses such a name.
func TestNew_RefusesDottedTableNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, variants[3]) // postgres/jsonb/2.5.6
	f.insert(t, []migratetest.Session{legacyAgentSession("s-1", "["+run("run-1", "s-1", "")+"]")})
	cfg := migrate.Config{DB: f.db, Dialect: sqlDialect(f.dialect, f.layout.Schema)}
	cfg.Tables.Sessions = f.layout.Schema + ".agno_sessions"
	m, err := migrate.New(cfg)
	if err == nil {
		sum, uerr := m.Up(ctx, "")
		t.Fatalf("New with table %s succeeded; Up then = %+v, %v", cfg.Tables.Sessions, sum, uerr)
	}
	if !strings.Contains(err.Error(), cfg.Tables.Sessions) || !strings.Contains(err.Error(), "schema") {
		t.Fatalf("New with table %s = %v; want a refusal naming the table and pointing at the dialect's schema", cfg.Tables.Sessions, err)
	}
}
