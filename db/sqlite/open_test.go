package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

var ctx = context.Background()

func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	return raw
}

func exec(t *testing.T, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := q.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

func TestOpen_RejectsFileThatIsNotSQLite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "notes.db")
	if err := os.WriteFile(path, []byte(strings.Repeat("this is a text file, not a database\n", 200)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err == nil || !strings.Contains(err.Error(), "is not a SQLite database") || !strings.Contains(err.Error(), path) {
		t.Fatalf("error = %v, want one saying %s is not a SQLite database", err, path)
	}
}

func TestOpen_ReportsLockedDatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "locked.db")
	holder := rawDB(t, path)
	conn, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec(t, conn, "PRAGMA journal_mode=DELETE", "CREATE TABLE x (a)", "BEGIN EXCLUSIVE", "INSERT INTO x VALUES (1)")
	start := time.Now()
	_, err = sqlite.Open(ctx, sqlite.Config{Path: path, BusyTimeout: 200 * time.Millisecond})
	if err == nil || !strings.Contains(err.Error(), "is locked by another connection or process") {
		t.Fatalf("error = %v, want a clear 'locked' error", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("waited %s for a 200ms busy timeout", time.Since(start))
	}
	exec(t, conn, "ROLLBACK")
}

func TestOpen_RefusesLegacy2xDatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agno2.db")
	exec(t, rawDB(t, path), `CREATE TABLE agno_sessions (session_id VARCHAR PRIMARY KEY, session_type VARCHAR NOT NULL,
		agent_id VARCHAR, team_id VARCHAR, workflow_id VARCHAR, user_id VARCHAR, session_data JSON, agent_data JSON,
		team_data JSON, workflow_data JSON, metadata JSON, runs JSON, summary JSON, created_at BIGINT NOT NULL, updated_at BIGINT)`)
	_, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if !errors.Is(err, db.ErrMigrationRequired) || !errors.Is(err, db.ErrSchemaMismatch) {
		t.Fatalf("error = %v, want ErrMigrationRequired", err)
	}
	for _, want := range []string{"agentry migrate up", "agno_sessions", "agno_runs"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not mention %q", err, want)
		}
	}
	cols, err := sqlstore.Columns(ctx, rawDB(t, path), sqlite.Dialect(), "agno_runs")
	if err != nil || len(cols) != 0 {
		t.Fatalf("opening a 2.x database created agno_runs (%v, %v)", cols, err)
	}
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path, SkipSchemaCheck: true})
	if err != nil {
		t.Fatalf("SkipSchemaCheck open: %v", err)
	}
	st, ok := sqlstore.FromDB(d)
	if !ok || st.SQL() == nil || st.SQLDialect().Name != "sqlite" {
		t.Fatal("FromDB does not expose the store")
	}
	d.Close()
}

func TestOpen_AcceptsMigratedDatabaseThatKeepsLegacyColumn(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "migrated.db")
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := sqlstore.FromDB(d)
	exec(t, st.SQL(), "ALTER TABLE agno_sessions ADD COLUMN runs JSON")
	d.Close()
	d, err = sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatalf("reopen migrated database: %v", err)
	}
	d.Close()
}

func TestOpen_ClassifiesUnknownLayouts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		ddl       string
		migration bool
		mentions  []string
	}{
		{"sessions without required columns", "CREATE TABLE agno_sessions (session_id VARCHAR PRIMARY KEY, foo TEXT)", false,
			[]string{"agno_sessions", "session_type", "created_at"}},
		{"runs table of another shape", "CREATE TABLE agno_runs (run_id VARCHAR PRIMARY KEY, payload TEXT)", false,
			[]string{"agno_runs", "run_data"}},
		{"2.x eval table without user_id", `CREATE TABLE agno_eval_runs (run_id VARCHAR PRIMARY KEY, eval_type VARCHAR, eval_data JSON,
			eval_input JSON, name VARCHAR, agent_id VARCHAR, team_id VARCHAR, workflow_id VARCHAR, model_id VARCHAR, model_provider VARCHAR,
			evaluated_component_name VARCHAR, created_at BIGINT, updated_at BIGINT)`, true, []string{"agno_eval_runs", "user_id"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "x.db")
			exec(t, rawDB(t, path), c.ddl)
			_, err := sqlite.Open(ctx, sqlite.Config{Path: path})
			if !errors.Is(err, db.ErrSchemaMismatch) || errors.Is(err, db.ErrMigrationRequired) != c.migration {
				t.Fatalf("error = %v, want schema mismatch (migration required: %v)", err, c.migration)
			}
			for _, m := range c.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Fatalf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestOpen_CreatesAndStampsEvery30Table(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "fresh.db")
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, _ := sqlstore.FromDB(d)
	dl := st.SQLDialect()
	tables := st.Tables()
	for _, k := range sqlstore.Kinds {
		name := tables.Name(k)
		cols, err := sqlstore.Columns(ctx, st.SQL(), dl, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range sqlstore.Columns30(k) {
			if !cols[c] {
				t.Fatalf("table %s lacks column %s", name, c)
			}
		}
		if len(cols) != len(sqlstore.Columns30(k)) {
			t.Fatalf("table %s has columns %v, want exactly %v", name, cols, sqlstore.Columns30(k))
		}
		var version, created string
		if err := st.SQL().QueryRowContext(ctx, "SELECT version, created_at FROM agno_schema_versions WHERE table_name = ?", name).Scan(&version, &created); err != nil {
			t.Fatalf("no version row for %s: %v", name, err)
		}
		if version != "3.0.0" {
			t.Fatalf("%s stamped %s", name, version)
		}
		if _, err := time.Parse(time.RFC3339, created); err != nil {
			t.Fatalf("%s created_at %q is not ISO-8601", name, created)
		}
	}
	var fk, idx int
	st.SQL().QueryRowContext(ctx, "SELECT COUNT(*) FROM pragma_foreign_key_list('agno_runs') WHERE \"table\" = 'agno_sessions' AND on_delete = 'CASCADE'").Scan(&fk)
	st.SQL().QueryRowContext(ctx, "SELECT COUNT(*) FROM pragma_index_list('agno_runs') WHERE name = 'idx_agno_runs_session_id_run_index'").Scan(&idx)
	if fk != 1 || idx != 1 {
		t.Fatalf("agno_runs: cascade fk %d, composite index %d; want 1 and 1", fk, idx)
	}
	var mode string
	st.SQL().QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode)
	if mode != "wal" {
		t.Fatalf("journal_mode = %s, want wal", mode)
	}
	d2, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatalf("reopening a 3.0 database: %v", err)
	}
	d2.Close()
}

func TestOpen_RenamedSessionsTableNamesRunsAfterIt(t *testing.T) {
	t.Parallel()
	d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "r.db"), Tables: sqlite.Tables{Sessions: "my_sessions"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, _ := sqlstore.FromDB(d)
	if got := st.Tables().Runs; got != "my_sessions_runs" {
		t.Fatalf("runs table = %s, want my_sessions_runs", got)
	}
	cols, _ := sqlstore.Columns(ctx, st.SQL(), st.SQLDialect(), "my_sessions_runs")
	if !cols["run_index"] {
		t.Fatal("my_sessions_runs was not created")
	}
}
