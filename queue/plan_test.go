package queue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/queue"
)

// plan is the query plan of one statement, as text.
func plan(t *testing.T, d *db.DB, pq queue.PlannedQuery) string {
	t.Helper()
	w := d.Driver().(db.SQLWriter).SQLWriter()
	explain := "EXPLAIN "
	if w.Dialect == "sqlite" {
		explain = "EXPLAIN QUERY PLAN "
	}
	rows, err := w.DB.QueryContext(context.Background(), explain+pq.Query, pq.Args...)
	if err != nil {
		t.Fatalf("%s: %v", pq.Query, err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintln(&out, vals[len(vals)-1])
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// On a realistic table (50,000 jobs, nearly all completed), the queue's
// listing, counts, stats and retention read agno_jobs through its indexes:
// none scans the table, and none sorts every job of a status.
func TestPlans_JobQueriesUseIndexes(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		q := openUnstarted(t, d)
		fillJobs(t, d, 50000)
		sqlite := d.Driver().(db.SQLWriter).SQLWriter().Dialect == "sqlite"
		want := map[string]string{
			"list by status": "idx_agno_jobs_status_created_at",
			// The expired jobs are looked up by date, not among all the
			// finished ones.
			"retention": "Index Cond: (created_at <",
			// The runnable queued jobs are a range of the claim's index.
			"oldest queued": "idx_agno_jobs_status_available_at",
		}
		// Statements that read every job (the stats) or stop after a bound
		// (the counts) may scan: Postgres reads the table in order where
		// SQLite reads the covering index.
		mayScan := map[string]bool{"count": true, "count by status": !sqlite, "stats": !sqlite}
		if sqlite {
			// Postgres may as well read the created_at index backwards
			// and skip the few jobs of another status.
			want["list by common status"] = "idx_agno_jobs_status_created_at"
			want["count by status"] = "COVERING INDEX idx_agno_jobs_status_created_at"
			want["stats"] = "COVERING INDEX idx_agno_jobs_status_created_at"
			want["retention"] = "created_at<?"
			// A user's page (user isolation on) is read in created_at
			// order from the user's entries instead of sorting them all.
			// Postgres may as well read the created_at index backwards
			// and skip the other users' jobs (here one in 50 is u1's).
			want["list by user"] = "idx_agno_jobs_user_id_created_at"
		}
		for name, pq := range q.PlannedQueries(time.Now().Unix()) {
			p := plan(t, d, pq)
			if idx, ok := want[name]; ok && !strings.Contains(p, idx) {
				t.Errorf("%s does not use %s:\n%s", name, idx, p)
			}
			if !mayScan[name] && (strings.Contains(p, "Seq Scan") || (sqlite && strings.Contains(p, "SCAN agno_jobs") && !strings.Contains(p, "INDEX"))) {
				t.Errorf("%s scans the table:\n%s", name, p)
			}
			if sqlite && strings.Contains(p, "TEMP B-TREE FOR ORDER BY") {
				t.Errorf("%s sorts all the jobs it selects:\n%s", name, p)
			}
		}
	})
}
