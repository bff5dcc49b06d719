package migrate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// newEmptyFixture returns an empty database of a dialect (no 2.x tables).
func newEmptyFixture(t testing.TB, dialect string) *fixtureDB {
	t.Helper()
	f := &fixtureDB{dialect: dialectName(dialect), layout: migratetest.Layout{Dialect: dialect}}
	switch dialect {
	case "sqlite":
		f.db, f.path = migratetest.SQLite(t)
		f.dsn = f.path
	case "postgres":
		f.db, f.layout.Schema, f.dsn = migratetest.Postgres(t)
	case "mysql":
		f.db, f.dsn = migratetest.MySQL(t)
	}
	return f
}

// newDriverFixture returns an empty database of a dialect on which the 3.0
// driver created its tables, then runs stmts on it.
func newDriverFixture(t *testing.T, dialect string, stmts ...string) *fixtureDB {
	t.Helper()
	f := newEmptyFixture(t, dialect)
	d, err := f.openDriver(t)
	if err != nil {
		t.Fatalf("open a fresh database with the driver: %v", err)
	}
	d.Close()
	f.exec(t, stmts...)
	return f
}

func (f *fixtureDB) exec(t testing.TB, stmts ...string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := f.db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// assertAllAt checks every existing 2.x-era table is at version v.
func assertAllAt(t *testing.T, m *migrate.Manager, v string) {
	t.Helper()
	sts, err := m.Status(context.Background())
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	for _, s := range sts {
		if s.Kind == migrate.KindToolResults || s.Kind == migrate.KindFS || s.Kind == migrate.KindRunSteps || s.Kind == migrate.KindApprovals ||
			s.Kind == migrate.KindSchedules || s.Kind == migrate.KindScheduleRuns ||
			s.Kind == migrate.KindComponents || s.Kind == migrate.KindComponentConfigs || s.Kind == migrate.KindComponentLinks {
			continue
		}
		if !s.Exists || s.Current != v {
			t.Errorf("%s: exists=%v at %q, want %s", s.Table, s.Exists, s.Current, v)
		}
	}
}

// TestDown_FreshDriverDatabaseGoesDownAndUp: a database the 3.0 driver
// created goes down to 2.5.6 with every table, then up again, and the driver
// opens it.
func TestDown_FreshDriverDatabaseGoesDownAndUp(t *testing.T) {
	t.Parallel()
	for _, dialect := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			downAndUp(t, newDriverFixture(t, dialect))
		})
	}
}

// TestDown_SQLiteMetricsWithInlineUniqueConstraint: a metrics table created
// by the earlier DDL, whose unique (user_id, date, aggregation_period) is a
// table constraint that blocks DROP COLUMN, is rebuilt without user_id.
func TestDown_SQLiteMetricsWithInlineUniqueConstraint(t *testing.T) {
	t.Parallel()
	f := newDriverFixture(t, "sqlite",
		`DROP TABLE agno_metrics`,
		`CREATE TABLE agno_metrics (
    id TEXT PRIMARY KEY NOT NULL,
    agent_runs_count BIGINT NOT NULL DEFAULT 0,
    team_runs_count BIGINT NOT NULL DEFAULT 0,
    workflow_runs_count BIGINT NOT NULL DEFAULT 0,
    agent_sessions_count BIGINT NOT NULL DEFAULT 0,
    team_sessions_count BIGINT NOT NULL DEFAULT 0,
    workflow_sessions_count BIGINT NOT NULL DEFAULT 0,
    users_count BIGINT NOT NULL DEFAULT 0,
    token_metrics TEXT NOT NULL DEFAULT '{}',
    model_metrics TEXT NOT NULL DEFAULT '{}',
    date DATE NOT NULL,
    aggregation_period TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT,
    completed BOOLEAN NOT NULL DEFAULT 0,
    user_id TEXT NOT NULL DEFAULT '',
    CONSTRAINT "uq_agno_metrics_user_date_period" UNIQUE (user_id, date, aggregation_period)
)`,
		`CREATE INDEX "idx_agno_metrics_date" ON agno_metrics (date)`,
		`CREATE INDEX "idx_agno_metrics_user_id" ON agno_metrics (user_id)`,
		`INSERT INTO agno_metrics (id, date, aggregation_period, created_at, user_id, agent_runs_count) VALUES ('m1', '2026-01-01', 'daily', 1, '', 7)`)
	downAndUp(t, f)
	var n int
	if err := f.db.QueryRow(`SELECT agent_runs_count FROM agno_metrics WHERE id = 'm1'`).Scan(&n); err != nil || n != 7 {
		t.Errorf("metrics row after the rebuild: count %d, %v; want 7", n, err)
	}
	var idx int
	if err := f.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'idx_agno_metrics_date'`).Scan(&idx); err != nil || idx != 1 {
		t.Errorf("index idx_agno_metrics_date after the rebuild: %d, %v", idx, err)
	}
}

// downAndUp goes down to 2.5.6 and up to 3.0.0, and reopens with the driver.
func downAndUp(t *testing.T, f *fixtureDB) {
	t.Helper()
	ctx := context.Background()
	m := f.manager(t)
	if _, err := m.Down(ctx, "2.5.6"); err != nil {
		t.Fatalf("Down to 2.5.6: %v", err)
	}
	assertAllAt(t, m, "2.5.6")
	if cols := f.columns(t, "agno_metrics"); cols["user_id"] {
		t.Errorf("agno_metrics keeps user_id at 2.5.6")
	}
	if _, err := m.Up(ctx, ""); err != nil {
		t.Fatalf("Up after Down: %v", err)
	}
	assertAllAt(t, m, migrate.Latest)
	if _, err := f.openDriver(t); err != nil {
		t.Fatalf("the driver refuses the database after Down and Up: %v", err)
	}
}

func (f *fixtureDB) columns(t testing.TB, table string) map[string]bool {
	t.Helper()
	var q string
	args := []any{table}
	switch f.dialect {
	case sqliteName:
		q = "SELECT name FROM pragma_table_info(?)"
	case postgresName:
		q, args = "SELECT column_name FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2", []any{f.layout.Schema, table}
	case mysqlName:
		q = "SELECT column_name FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?"
	}
	rows, err := f.db.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		out[c] = true
	}
	return out
}

// TestDown_RefusesBeforeChangingAnythingWhenAStepCannotRun: a table whose
// user_id no step can drop stops Down before the sessions table moves.
func TestDown_RefusesBeforeChangingAnythingWhenAStepCannotRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newDriverFixture(t, "sqlite",
		`DROP TABLE agno_knowledge`,
		`CREATE TABLE agno_knowledge (id TEXT PRIMARY KEY NOT NULL, name TEXT NOT NULL, description TEXT NOT NULL, metadata TEXT, type TEXT,
size BIGINT, linked_to TEXT, access_count BIGINT, status TEXT, status_message TEXT, created_at BIGINT, updated_at BIGINT, external_id TEXT,
user_id TEXT REFERENCES agno_sessions (session_id))`)
	m := f.manager(t)
	_, err := m.Down(ctx, "2.5.6")
	if err == nil || !strings.Contains(err.Error(), "nothing changed") || !strings.Contains(err.Error(), "agno_knowledge") {
		t.Fatalf("Down = %v, want a refusal naming agno_knowledge before any change", err)
	}
	assertAllAt(t, m, migrate.Latest)
	if cols := f.columns(t, "agno_metrics"); !cols["user_id"] {
		t.Errorf("agno_metrics lost user_id although Down refused")
	}
}

// TestDown_DryRunPlansWithoutWriting: a dry Down of a fresh SQLite database
// plans plain column drops (the indexes over user_id go first) and changes
// nothing.
func TestDown_DryRunPlansWithoutWriting(t *testing.T) {
	t.Parallel()
	f := newDriverFixture(t, "sqlite")
	m := f.manager(t, func(c *migrate.Config) { c.DryRun = true })
	sum, err := m.Down(context.Background(), "2.5.6")
	if err != nil {
		t.Fatalf("dry Down: %v", err)
	}
	for _, st := range sum.Steps {
		for _, a := range st.Actions {
			if strings.Contains(a, "rebuild table") {
				t.Errorf("%s: dry run plans %q, want a plain drop", st.Table, a)
			}
		}
	}
	assertAllAt(t, m, migrate.Latest)
	if !f.columns(t, "agno_metrics")["user_id"] {
		t.Errorf("dry run dropped agno_metrics.user_id")
	}
}
