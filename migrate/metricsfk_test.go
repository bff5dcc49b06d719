package migrate_test

import (
	"context"
	"strings"
	"testing"
)

// On SQLite the metrics rebuild drops the 2.x table and renames a copy in
// its place. A foreign key of the metrics table is carried over (it was
// refused, after Up had already added the user_id column), and one of
// another table onto the metrics table no longer loses that table's rows:
// with foreign keys on, SQLite's DROP TABLE deletes every row first, firing
// ON DELETE CASCADE. A view of the metrics table no longer fails the
// rename that ends the rebuild.
func TestUp_SQLiteMetricsRebuildAndForeignKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const row = "INSERT INTO agno_metrics (id, date, aggregation_period, created_at, agent_runs_count, token_metrics, model_metrics, completed) VALUES ('m0', '2026-03-01', 'daily', 1700000000, 7, '{}', '[]', 1)"
	t.Run("of the metrics table", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, variants[1]) // sqlite/2.5.6
		f.addLegacyMetricsUnique(t)
		var ddl string
		if err := f.db.QueryRow("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'agno_metrics'").Scan(&ddl); err != nil {
			t.Fatal(err)
		}
		withFK := strings.TrimSuffix(strings.TrimSpace(ddl), ")") + ", FOREIGN KEY (aggregation_period) REFERENCES periods (name))"
		f.exec(t, "CREATE TABLE periods (name TEXT PRIMARY KEY)", "INSERT INTO periods VALUES ('daily')",
			"DROP TABLE agno_metrics", withFK, `CREATE INDEX "ix_agno_metrics_date" ON agno_metrics (date)`, row)
		fks := f.foreignKeysOf(t, "agno_metrics")
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		var got string
		if err := f.db.QueryRow("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'agno_metrics'").Scan(&got); err != nil || strings.Contains(got, "uq_metrics_date_period") {
			t.Fatalf("metrics table after Up: %s, %v; want the 2.x unique key gone", got, err)
		}
		if after := f.foreignKeysOf(t, "agno_metrics"); strings.Join(after, ",") != strings.Join(fks, ",") || len(fks) != 1 {
			t.Fatalf("foreign keys of the metrics table: %v → %v; want the one kept", fks, after)
		}
		var n int
		if err := f.db.QueryRow("SELECT count(*) FROM agno_metrics WHERE id = 'm0' AND agent_runs_count = 7").Scan(&n); err != nil || n != 1 {
			t.Fatalf("row m0 after the rebuild: %d, %v", n, err)
		}
	})
	t.Run("onto the metrics table", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, variants[1]) // sqlite/2.5.6
		f.addLegacyMetricsUnique(t)
		f.exec(t, row,
			"CREATE TABLE metric_notes (id TEXT PRIMARY KEY, metric_id TEXT REFERENCES agno_metrics (id) ON DELETE CASCADE, note TEXT)",
			"INSERT INTO metric_notes VALUES ('n0', 'm0', 'kept')")
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		var ddl string
		if err := f.db.QueryRow("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'agno_metrics'").Scan(&ddl); err != nil || strings.Contains(ddl, "uq_metrics_date_period") {
			t.Fatalf("metrics table after Up: %s, %v; want the 2.x unique key gone", ddl, err)
		}
		var note string
		if err := f.db.QueryRow("SELECT note FROM metric_notes WHERE id = 'n0' AND metric_id = 'm0'").Scan(&note); err != nil || note != "kept" {
			t.Fatalf("the row referencing m0 after the rebuild: %q, %v; want it kept", note, err)
		}
		rows, err := f.db.Query("PRAGMA foreign_key_check")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		if rows.Next() {
			t.Fatal("foreign_key_check reports a violation after the rebuild")
		}
	})
	t.Run("a view of the metrics table", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, variants[1]) // sqlite/2.5.6
		f.addLegacyMetricsUnique(t)
		f.exec(t, row, "CREATE VIEW metrics_by_day AS SELECT date, sum(agent_runs_count) AS runs FROM agno_metrics GROUP BY date")
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		var runs int
		if err := f.db.QueryRow("SELECT runs FROM metrics_by_day WHERE date = '2026-03-01'").Scan(&runs); err != nil || runs != 7 {
			t.Fatalf("the view after the rebuild: %d, %v; want it reading the rebuilt table", runs, err)
		}
	})
}

// foreignKeysOf lists a SQLite table's foreign keys as text to compare.
func (f *fixtureDB) foreignKeysOf(t *testing.T, table string) []string {
	t.Helper()
	rows, err := f.db.Query(`SELECT "table" || ' ' || "from" || ' ' || COALESCE("to", '') || ' ' || on_delete FROM pragma_foreign_key_list(?) ORDER BY id, seq`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}
