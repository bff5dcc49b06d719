package runlog_test

import (
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/runlog"
)

// An Append whose writes keep losing their seqs to another append (each
// try collides) is bounded as a whole by the query timeout: its retries
// share one deadline instead of each getting a fresh one, and it ends with
// db.ErrUnavailable (and context.DeadlineExceeded) once the deadline
// passed. Each try here collides, then goes on half a timeout after the
// one before: with a deadline per try, the tries went on (up to 100).
func TestAppend_RetriesShareOneDeadline(t *testing.T) {
	const timeout = time.Second
	for _, name := range []string{"postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			base := stores[name](t)
			ctx := context.Background()
			l, err := runlog.Open(ctx, db.Wrap(base.Driver(), db.Config{QueryTimeout: timeout}))
			if err != nil {
				t.Fatal(err)
			}
			other, err := runlog.Open(ctx, base)
			if err != nil {
				t.Fatal(err)
			}
			const runID = "run-colliding"
			ev := []runlog.Pending{{Event: "RunContent", Data: []byte(`{"event":"RunContent"}`)}}
			var tries atomic.Int32
			var began time.Time
			// collide fixes the transaction's snapshot, then has another
			// append commit the run's next seq: the write after it reads a
			// stale last seq and meets that key.
			collide := func(ctx context.Context, tx *sql.Tx) error {
				n := tries.Add(1)
				if err := ctx.Err(); err != nil {
					return err
				}
				if n > 5 {
					t.Errorf("try %d of one Append: its retries are not bounded by one deadline", n)
					return errors.New("test: too many tries")
				}
				// Postgres takes the snapshot at the transaction's first
				// query, InnoDB at its first read of a table.
				snapshot := `SELECT COUNT(*) FROM ` + runlog.Table
				if name == "postgres" {
					if _, err := tx.ExecContext(ctx, `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`); err != nil {
						return err
					}
					snapshot = `SELECT 1`
				}
				var c int64
				if err := tx.QueryRowContext(ctx, snapshot).Scan(&c); err != nil {
					return err
				}
				if err := other.Append(context.Background(), runID, 1, ev, nil); err != nil {
					return err
				}
				// Try n goes on at n half-timeouts after the Append began:
				// past a deadline set once, the second try never does.
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Until(began.Add(time.Duration(n) * timeout / 2))):
				}
				return nil
			}
			began = time.Now()
			err = l.Append(ctx, runID, 2, ev, collide)
			if !errors.Is(err, db.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("after %d tries: %v, want db.ErrUnavailable and context.DeadlineExceeded", tries.Load(), err)
			}
			if n := tries.Load(); n < 2 {
				t.Fatalf("%d tries: the test's fence did not make the first try collide", n)
			}
		})
	}
}
