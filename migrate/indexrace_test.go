package migrate_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"
)

// TestUp_IndexAnInterruptedUpCreatedMeanwhileIsDone: MySQL finishes a DDL
// statement after its client went away (an Up cancelled mid CREATE INDEX),
// so an Up run again right after can find the index missing, then wait on
// the table's lock behind that statement. Once it is done, the index is
// there, and Up goes on instead of failing with "Duplicate key name".
func TestUp_IndexAnInterruptedUpCreatedMeanwhileIsDone(t *testing.T) {
	onEachBackend(t, []variant{{"mysql/2.5.6", "mysql", "", "2.5.6"}}, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		metrics := f.table("agno_metrics")
		// What the interrupted Up had done of the metrics step.
		if _, err := f.db.ExecContext(ctx, "ALTER TABLE "+metrics+" ADD COLUMN user_id VARCHAR(255) NOT NULL DEFAULT ''"); err != nil {
			t.Fatal(err)
		}
		// A reader holds the table, so the interrupted Up's CREATE INDEX
		// (still running on the server) and this Up's queue behind it.
		blocker, err := f.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer blocker.Rollback()
		if _, err := blocker.ExecContext(ctx, "SELECT count(*) FROM "+metrics); err != nil {
			t.Fatal(err)
		}
		orphan := make(chan error, 1)
		go func() {
			_, err := f.db.ExecContext(ctx, "CREATE INDEX `idx_agno_metrics_user_id` ON "+metrics+" (`user_id`)")
			orphan <- err
		}()
		waitForCreates(t, f.db, 1)
		up := make(chan error, 1)
		go func() {
			_, err := f.manager(t).Up(ctx, "")
			up <- err
		}()
		waitForCreates(t, f.db, 2)
		if err := blocker.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := <-orphan; err != nil {
			t.Fatalf("the interrupted Up's CREATE INDEX: %v", err)
		}
		if err := <-up; err != nil {
			t.Fatalf("Up while an interrupted Up's CREATE INDEX finished: %v", err)
		}
	})
}

// waitForCreates waits until n statements creating idx_agno_metrics_user_id
// wait on the server.
func waitForCreates(t *testing.T, db *sql.DB, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		var got int
		err := db.QueryRow("SELECT count(*) FROM information_schema.processlist WHERE info LIKE 'CREATE INDEX `idx_agno_metrics_user_id`%' AND db = DATABASE()").Scan(&got)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
		if got >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %d waiting CREATE INDEX statements after 20s", n)
}
