package migrate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/migrate"
)

// addLegacyMetricsUnique gives the fixture's metrics table Agno 2.5.6's
// unique key on (date, aggregation_period). On SQLite it is part of the
// table's definition (CREATE TABLE … CONSTRAINT … UNIQUE), as SQLAlchemy
// writes it, with an index of its own beside it.
func (f *fixtureDB) addLegacyMetricsUnique(t *testing.T) {
	t.Helper()
	metrics := f.table("agno_metrics")
	if f.dialect != sqliteName {
		f.exec(t, "ALTER TABLE "+metrics+" ADD CONSTRAINT agno_metrics_uq_metrics_date_period UNIQUE (date, aggregation_period)")
		return
	}
	var ddl string
	if err := f.db.QueryRow("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'agno_metrics'").Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	ddl = strings.TrimSuffix(strings.TrimSpace(ddl), ")") + ", CONSTRAINT agno_metrics_uq_metrics_date_period UNIQUE (date, aggregation_period))"
	f.exec(t, "DROP TABLE agno_metrics", ddl, `CREATE INDEX "ix_agno_metrics_date" ON agno_metrics (date)`)
}

// sqliteSchemaOf returns a SQLite table's columns (name, type, not null,
// default, key) and the SQL of its indexes, as text to compare.
func (f *fixtureDB) sqliteSchemaOf(t *testing.T, table string) (cols, indexes []string) {
	t.Helper()
	rows, err := f.db.Query(`SELECT name || ' ' || type || ' ' || "notnull" || ' ' || COALESCE(dflt_value, '-') || ' ' || pk FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	irows, err := f.db.Query(`SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL ORDER BY name`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer irows.Close()
	for irows.Next() {
		var s string
		if err := irows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		indexes = append(indexes, s)
	}
	return cols, indexes
}

// Agno 2.5.6 created the metrics table with a unique key on (date,
// aggregation_period), named {table}_uq_metrics_date_period; 3.0 keys it
// by (user_id, date, aggregation_period). Up swaps the keys, as Agno 3.0's
// migration does: kept, the old key lets only one user's row exist per
// day, and the store's per-user metrics upsert fails for the second.
func TestUp_MetricsLegacyUniqueKeyIsDropped(t *testing.T) {
	onEachBackend(t, []variant{variants[1], variants[3], variants[5]}, func(t *testing.T, ctx context.Context, f *fixtureDB) { // sqlite, postgres, mysql at 2.5.6
		metrics := f.table("agno_metrics")
		f.addLegacyMetricsUnique(t)
		f.exec(t, "INSERT INTO "+metrics+" (id, date, aggregation_period, created_at, agent_runs_count, token_metrics, model_metrics, completed) VALUES ('m0', '2026-03-01', 'daily', 1700000000, 7, '{}', '[]', TRUE)")
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		d, err := f.openDriver(t)
		if err != nil {
			t.Fatal(err)
		}
		md := d.Driver().(db.MetricsDriver)
		var rows []db.DailyMetrics
		for _, u := range []string{"alice", "bob"} {
			rows = append(rows, db.DailyMetrics{ID: "m-" + u, UserID: u, Date: "2026-03-01", AgentRunsCount: 1, TokenMetrics: []byte("{}"),
				ModelMetrics: []byte("[]"), AggregationPeriod: "daily", CreatedAt: 1700000001, UpdatedAt: 1700000001})
		}
		if err := md.UpsertDailyMetrics(ctx, rows); err != nil {
			t.Fatalf("per-user metrics of one day after Up: %v", err)
		}
		got, err := md.ListDailyMetrics(ctx, db.MetricsFilter{})
		if err != nil || len(got) != 3 {
			t.Fatalf("metrics rows = %d, %v; want the legacy row, alice's and bob's", len(got), err)
		}
	})
}

// Down to 2.5.6 gives the metrics table Agno 2.x's unique key on (date,
// aggregation_period) back: 2.x writes metrics with ON CONFLICT (date,
// aggregation_period) (Postgres, SQLite), which needs it.
func TestDown_MetricsLegacyUniqueKeyIsRestored(t *testing.T) {
	onEachBackend(t, []variant{variants[1], variants[3], variants[5]}, func(t *testing.T, ctx context.Context, f *fixtureDB) { // sqlite, postgres, mysql at 2.5.6
		metrics := f.table("agno_metrics")
		f.addLegacyMetricsUnique(t)
		m := f.manager(t)
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Down(ctx, "2.5.6"); err != nil {
			t.Fatal(err)
		}
		f.exec(t, "INSERT INTO "+metrics+" (id, date, aggregation_period, created_at) VALUES ('m1', '2026-03-01', 'daily', 1)")
		if _, err := f.db.Exec("INSERT INTO " + metrics + " (id, date, aggregation_period, created_at) VALUES ('m2', '2026-03-01', 'daily', 2)"); err == nil {
			t.Fatalf("a second row of one day and period went in after Down: the 2.x unique key is missing")
		}
	})
}

// On SQLite the 2.x key is part of the metrics table's definition: Up
// rebuilds the table without it, in one transaction, keeping every column
// (type, NOT NULL, default, key), every row and every other index; the
// table it leaves is the one SQLite's DDL would give the same columns.
func TestUp_SQLiteMetricsRebuildKeepsColumnsRowsAndIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, variants[1]) // sqlite/2.5.6
	f.addLegacyMetricsUnique(t)
	f.exec(t, "INSERT INTO agno_metrics (id, date, aggregation_period, created_at, agent_runs_count, token_metrics, model_metrics, completed) VALUES ('m0', '2026-03-01', 'daily', 1700000000, 7, '{\"a\": 1}', '[]', 1)")
	m := f.manager(t)
	dry := f.manager(t, func(c *migrate.Config) { c.DryRun = true })
	sum, err := dry.Up(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if !planned(sum, "agno_metrics", "rebuild") {
		t.Errorf("dry run plans %+v; want the metrics rebuild named", sum.Steps)
	}
	if _, err := m.Up(ctx, ""); err != nil {
		t.Fatal(err)
	}
	cols, idx := f.sqliteSchemaOf(t, "agno_metrics")
	if _, err := m.Up(ctx, ""); err != nil { // a rerun finds nothing to rebuild
		t.Fatal(err)
	}
	var ddl string
	if err := f.db.QueryRow("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'agno_metrics'").Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(ddl, "uq_metrics_date_period") {
		t.Errorf("metrics table after Up: %s; want the 2.x unique key gone", ddl)
	}
	var n int
	var data string
	if err := f.db.QueryRow("SELECT agent_runs_count, token_metrics FROM agno_metrics WHERE id = 'm0'").Scan(&n, &data); err != nil || n != 7 || data != `{"a": 1}` {
		t.Errorf("row m0 after the rebuild: %d %s, %v", n, data, err)
	}
	hasIndex := func(sub string) bool {
		for _, s := range idx {
			if strings.Contains(s, sub) {
				return true
			}
		}
		return false
	}
	for _, want := range []string{"ix_agno_metrics_date", "uq_agno_metrics_user_date_period", "idx_agno_metrics_user_id"} {
		if !hasIndex(want) {
			t.Errorf("index %s missing after the rebuild; indexes: %v", want, idx)
		}
	}
	if c2, i2 := f.sqliteSchemaOf(t, "agno_metrics"); strings.Join(c2, ",") != strings.Join(cols, ",") || len(i2) != len(idx) {
		t.Errorf("a second Up changed the table: %v %v → %v %v", cols, idx, c2, i2)
	}
	for _, c := range []string{"id VARCHAR 1 - 1", "date DATE 1 - 0", "aggregation_period VARCHAR 1 - 0", "user_id TEXT 1 '' 0"} {
		found := false
		for _, got := range cols {
			found = found || got == c
		}
		if !found {
			t.Errorf("column %q missing after the rebuild: %v", c, cols)
		}
	}
}

// planned reports whether a summary's steps of table name an action
// holding word.
func planned(sum *migrate.Summary, table, word string) bool {
	for _, st := range sum.Steps {
		for _, a := range st.Actions {
			if st.Table == table && strings.Contains(a, word) {
				return true
			}
		}
	}
	return false
}
