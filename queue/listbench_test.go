package queue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// openUnstarted opens a queue on d that never starts (its tables exist; no
// job runs).
func openUnstarted(tb testing.TB, d *db.DB) *queue.Queue {
	tb.Helper()
	q, err := queue.Open(context.Background(), d, testCfg(), func(context.Context, *queue.Job) (run.Status, error) {
		return "", fmt.Errorf("not started")
	})
	if err != nil {
		tb.Fatal(err)
	}
	return q
}

// fillJobs writes n job rows as a day of runs leaves them: nearly all
// completed, one in 50 failed, one in 97 cancelled, the last 120 queued or
// running; 50 users, one session each, created one a second up to now.
// Postgres's statistics and visibility map are then brought up to date,
// as autovacuum does for a table with this much churn.
func fillJobs(tb testing.TB, d *db.DB, n int) {
	tb.Helper()
	w := d.Driver().(db.SQLWriter).SQLWriter()
	table := `"agno_jobs"`
	series := fmt.Sprintf(`WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < %d) `, n)
	from := ` FROM g`
	if w.Dialect == "postgres" {
		table = `"` + w.Schema + `"."agno_jobs"`
		series, from = "", fmt.Sprintf(` FROM generate_series(1, %d) AS g(i)`, n)
	}
	stmt := series + `INSERT INTO ` + table + ` (id, component_type, job_type, component_id, session_id, user_id, payload,
	status, attempt, max_attempts, available_at, locked_by, locked_at, created_at, updated_at, completed_at, engine_job_id)
SELECT 'fill-' || CAST(i AS TEXT), 'agent', 'run', 'a' || CAST(i % 5 AS TEXT), 'fs-' || CAST(i AS TEXT), 'u' || CAST(i % 50 AS TEXT),
	'{"message":"a message of a realistic length for a job"}',
	CASE WHEN i > :n - 100 THEN 'queued' WHEN i > :n - 120 THEN 'running' WHEN i % 50 = 0 THEN 'failed' WHEN i % 97 = 0 THEN 'cancelled' ELSE 'completed' END,
	1, 3, :now - :n + i, CASE WHEN i > :n - 120 AND i <= :n - 100 THEN 'node-x' END, CASE WHEN i > :n - 120 AND i <= :n - 100 THEN :now END,
	:now - :n + i, :now - :n + i, CASE WHEN i <= :n - 120 THEN :now - :n + i + 1 END, i` + from
	stmt = strings.NewReplacer(":now", fmt.Sprint(time.Now().Unix()), ":n", fmt.Sprint(n)).Replace(stmt)
	if _, err := w.DB.ExecContext(context.Background(), stmt); err != nil {
		tb.Fatalf("fill agno_jobs: %v\n%s", err, stmt)
	}
	if w.Dialect == "postgres" {
		if _, err := w.DB.ExecContext(context.Background(), `VACUUM ANALYZE `+table); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkList_100kJobs is one page of GET /queue/jobs (20 jobs, page 1)
// on a table of 100,000 jobs as a day of runs leaves it (fillJobs): all
// jobs, the completed ones (nearly all), the failed ones (the dead-letter
// list), and one user's (user isolation on; 2,000 jobs).
func BenchmarkList_100kJobs(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			d := drivers[name](b)
			q := openUnstarted(b, d)
			fillJobs(b, d, 100000)
			for _, f := range []struct {
				name string
				f    queue.Filter
			}{
				{"all", queue.Filter{}},
				{"completed", queue.Filter{Status: queue.StatusCompleted}},
				{"failed", queue.Filter{Status: queue.StatusFailed}},
				{"one-user", queue.Filter{UserID: "u1", Scoped: true}},
			} {
				f.f.Limit, f.f.Page = 20, 1
				b.Run(f.name, func(b *testing.B) {
					ctx := context.Background()
					for b.Loop() {
						jobs, total, err := q.List(ctx, f.f)
						if err != nil || len(jobs) != 20 || total < 20 {
							b.Fatal(len(jobs), total, err)
						}
					}
				})
			}
		})
	}
}
