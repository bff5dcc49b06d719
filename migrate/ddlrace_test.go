package migrate_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"
)

// TestUp_DDLAnInterruptedUpRanMeanwhileIsDone: MySQL finishes a DDL
// statement after its client went away (an Up cancelled mid ALTER TABLE or
// CREATE INDEX, or DROP INDEX), so an Up run again right after can find
// the column or index missing (or the index there), then wait on the
// table's lock behind that statement. Once it is done, the column or index
// is there (or gone), and Up goes on instead of failing with "Duplicate
// column name", "Duplicate key name" or "Can't DROP".
func TestUp_DDLAnInterruptedUpRanMeanwhileIsDone(t *testing.T) {
	for _, c := range []struct {
		name string
		// before is what the interrupted Up had done; orphan the statement
		// still running on the server, which like starts.
		before, orphan, like string
	}{
		{"add column", "", "ALTER TABLE `agno_metrics` ADD COLUMN `user_id` VARCHAR(255) NOT NULL DEFAULT ''", "ALTER TABLE `agno_metrics` ADD COLUMN%"},
		{"create index", "ALTER TABLE `agno_metrics` ADD COLUMN `user_id` VARCHAR(255) NOT NULL DEFAULT ''",
			"CREATE INDEX `idx_agno_metrics_user_id` ON `agno_metrics` (`user_id`)", "CREATE INDEX `idx_agno_metrics_user_id`%"},
		// The interrupted Up had made the new keys and was dropping 2.x's.
		{"drop index", "ALTER TABLE `agno_metrics` ADD CONSTRAINT `agno_metrics_uq_metrics_date_period` UNIQUE (date, aggregation_period), " +
			"ADD COLUMN `user_id` VARCHAR(255) NOT NULL DEFAULT '', ADD INDEX `idx_agno_metrics_user_id` (`user_id`), " +
			"ADD UNIQUE `uq_agno_metrics_user_date_period` (`user_id`, `date`, `aggregation_period`)", "DROP INDEX `agno_metrics_uq_metrics_date_period` ON `agno_metrics`", "DROP INDEX `agno_metrics_uq_metrics_date_period`%"},
	} {
		t.Run(c.name, func(t *testing.T) {
			onEachBackend(t, []variant{{"mysql/2.5.6", "mysql", "", "2.5.6"}}, func(t *testing.T, ctx context.Context, f *fixtureDB) {
				if c.before != "" {
					if _, err := f.db.ExecContext(ctx, c.before); err != nil {
						t.Fatal(err)
					}
				}
				// A reader holds the table, so the interrupted Up's
				// statement and this Up's queue behind it.
				blocker, err := f.db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer blocker.Rollback()
				if _, err := blocker.ExecContext(ctx, "SELECT count(*) FROM `agno_metrics`"); err != nil {
					t.Fatal(err)
				}
				orphan := make(chan error, 1)
				go func() {
					_, err := f.db.ExecContext(ctx, c.orphan)
					orphan <- err
				}()
				waitForStatements(t, f.db, c.like, 1)
				up := make(chan error, 1)
				go func() {
					_, err := f.manager(t).Up(ctx, "")
					up <- err
				}()
				waitForStatements(t, f.db, c.like, 2)
				if err := blocker.Commit(); err != nil {
					t.Fatal(err)
				}
				if err := <-orphan; err != nil {
					t.Fatalf("the interrupted Up's statement: %v", err)
				}
				if err := <-up; err != nil {
					t.Fatalf("Up while an interrupted Up's statement finished: %v", err)
				}
			})
		})
	}
}

// waitForStatements waits until n statements whose text is like the
// pattern run on the server.
func waitForStatements(t *testing.T, db *sql.DB, like string, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var got int
		err := db.QueryRow("SELECT count(*) FROM information_schema.processlist WHERE info LIKE ? AND db = DATABASE()", like).Scan(&got)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %d statements like %q after 20s", n, like)
}
