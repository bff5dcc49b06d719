package migrate_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/db"
)

// Agno 2.5.6 created the metrics table with a unique key on (date,
// aggregation_period), named {table}_uq_metrics_date_period; 3.0 keys it
// by (user_id, date, aggregation_period). Up swaps the keys, as Agno 3.0's
// migration does: kept, the old key lets only one user's row exist per
// day, and the store's per-user metrics upsert fails for the second.
func TestUp_MetricsLegacyUniqueKeyIsDropped(t *testing.T) {
	t.Parallel()
	for _, v := range []variant{variants[3], variants[5]} { // postgres, mysql at 2.5.6
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t, v)
			metrics := f.table("agno_metrics")
			f.exec(t, "ALTER TABLE "+metrics+" ADD CONSTRAINT agno_metrics_uq_metrics_date_period UNIQUE (date, aggregation_period)",
				"INSERT INTO "+metrics+" (id, date, aggregation_period, created_at, agent_runs_count, token_metrics, model_metrics, completed) VALUES ('m0', '2026-03-01', 'daily', 1700000000, 7, '{}', '[]', TRUE)")
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
}

// Down to 2.5.6 gives the metrics table Agno 2.x's unique key on (date,
// aggregation_period) back: 2.x writes metrics with ON CONFLICT (date,
// aggregation_period) (Postgres, SQLite), which needs it.
func TestDown_MetricsLegacyUniqueKeyIsRestored(t *testing.T) {
	t.Parallel()
	for _, v := range []variant{variants[3], variants[5]} { // postgres, mysql at 2.5.6
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t, v)
			metrics := f.table("agno_metrics")
			f.exec(t, "ALTER TABLE "+metrics+" ADD CONSTRAINT agno_metrics_uq_metrics_date_period UNIQUE (date, aggregation_period)")
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
}
