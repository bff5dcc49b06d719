package postgres_test

import (
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

func rawDB(t *testing.T) *sql.DB {
	t.Helper()
	raw, err := sql.Open("pgx", testDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if err := raw.PingContext(ctx); err != nil {
		t.Fatalf("postgres test server unavailable: %v\n%s", err, startHint)
	}
	return raw
}

// scratchSchema creates an empty schema dropped after the test.
func scratchSchema(t *testing.T, raw *sql.DB) string {
	t.Helper()
	name := randomName()
	if _, err := raw.ExecContext(ctx, "CREATE SCHEMA "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+name+" CASCADE") })
	return name
}

func TestOpen_UnreachableServerFailsFast(t *testing.T) {
	t.Parallel()
	start := time.Now()
	_, err := postgres.Open(ctx, postgres.Config{DSN: "postgres://postgres@127.0.0.1:1/test?sslmode=disable", ConnectTimeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "cannot connect") {
		t.Fatalf("error = %v, want a clear connection error", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %s to fail", time.Since(start))
	}
}

func TestOpen_RefusesLegacy2xDatabase(t *testing.T) {
	t.Parallel()
	raw := rawDB(t)
	schema := scratchSchema(t, raw)
	if _, err := raw.ExecContext(ctx, `CREATE TABLE `+schema+`.agno_sessions (session_id VARCHAR PRIMARY KEY, session_type VARCHAR NOT NULL,
		agent_id VARCHAR, team_id VARCHAR, workflow_id VARCHAR, user_id VARCHAR, session_data JSONB, agent_data JSONB, team_data JSONB,
		workflow_data JSONB, metadata JSONB, runs JSONB, summary JSONB, created_at BIGINT NOT NULL, updated_at BIGINT)`); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(ctx, postgres.Config{DSN: testDSN(), Schema: schema})
	if !errors.Is(err, db.ErrMigrationRequired) || !strings.Contains(err.Error(), "agentry migrate up") || !strings.Contains(err.Error(), "agno_sessions") {
		t.Fatalf("error = %v, want ErrMigrationRequired naming the table and `agentry migrate up`", err)
	}
	var n int
	raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = $1", schema).Scan(&n)
	if n != 1 {
		t.Fatalf("opening a 2.x schema created tables: %d tables now", n)
	}
	d, err := postgres.Open(ctx, postgres.Config{DSN: testDSN(), Schema: schema, SkipSchemaCheck: true})
	if err != nil {
		t.Fatalf("SkipSchemaCheck: %v", err)
	}
	d.Close()
}

func TestOpen_UnknownLayoutIsSchemaMismatch(t *testing.T) {
	t.Parallel()
	raw := rawDB(t)
	schema := scratchSchema(t, raw)
	if _, err := raw.ExecContext(ctx, `CREATE TABLE `+schema+`.agno_memories (memory_id VARCHAR PRIMARY KEY, text VARCHAR)`); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(ctx, postgres.Config{DSN: testDSN(), Schema: schema})
	if !errors.Is(err, db.ErrSchemaMismatch) || errors.Is(err, db.ErrMigrationRequired) || !strings.Contains(err.Error(), "agno_memories") {
		t.Fatalf("error = %v, want ErrSchemaMismatch naming agno_memories", err)
	}
}

func TestOpen_CreatesStampedJSONBTablesOnce(t *testing.T) {
	t.Parallel()
	raw := rawDB(t)
	schema := randomName()
	t.Cleanup(func() { raw.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	// Concurrent openers of a fresh schema must not race on CREATE TABLE.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() {
			d, err := postgres.Open(ctx, postgres.Config{DSN: testDSN(), Schema: schema, MaxOpenConns: 2})
			if err == nil {
				d.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	tables := sqlstore.Tables{}.WithDefaults()
	for _, k := range sqlstore.Kinds {
		var version string
		if err := raw.QueryRowContext(ctx, "SELECT version FROM "+schema+".agno_schema_versions WHERE table_name = $1", tables.Name(k)).Scan(&version); err != nil || version != "3.0.0" {
			t.Fatalf("%s: version %q, %v", tables.Name(k), version, err)
		}
	}
	var typ string
	raw.QueryRowContext(ctx, "SELECT data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'agno_runs' AND column_name = 'run_data'", schema).Scan(&typ)
	if typ != "jsonb" {
		t.Fatalf("run_data type %q, want jsonb", typ)
	}
	var hasRuns int
	raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'agno_sessions' AND column_name = 'runs'", schema).Scan(&hasRuns)
	if hasRuns != 0 {
		t.Fatal("a fresh 3.0 agno_sessions has a runs column")
	}
}

func TestOpen_RenamedSessionsTableNamesRunsAfterIt(t *testing.T) {
	t.Parallel()
	d := openFresh(t, postgres.Config{Tables: postgres.Tables{Sessions: "team_sessions"}})
	st, _ := sqlstore.FromDB(d)
	cols, err := sqlstore.Columns(ctx, st.SQL(), st.SQLDialect(), "team_sessions_runs")
	if err != nil || !cols["run_index"] {
		t.Fatalf("team_sessions_runs missing (%v)", err)
	}
}
