package queue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/queue"
)

// A scoped listing and scoped stats hold the user's jobs only; "" is the
// jobs stored without a user.
func TestListAndStats_ScopedToOneUser(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		q := openQueue(t, d, testCfg(), complete(d))
		users := map[string]int{"u1": 3, "u2": 2, "": 2}
		var ids []string
		for u, n := range users {
			for i := range n {
				id := fmt.Sprintf("j-%s-%d", u, i)
				s, r, j := pending(id, u)
				if _, _, err := q.Enqueue(context.Background(), s, r, j); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
		}
		for _, id := range ids {
			waitFor(t, id+" completed", func() bool { return jobOf(t, q, id).Status == queue.StatusCompleted })
		}
		ctx := context.Background()
		for u, n := range users {
			jobs, total, err := q.List(ctx, queue.Filter{UserID: u, Scoped: true, Status: queue.StatusCompleted, Limit: 10, Page: 1})
			if err != nil {
				t.Fatal(err)
			}
			if total != n || len(jobs) != n {
				t.Fatalf("user %q: %d jobs listed, total %d; want %d", u, len(jobs), total, n)
			}
			for _, j := range jobs {
				if j.UserID != u {
					t.Fatalf("user %q's listing holds job %s of user %q", u, j.ID, j.UserID)
				}
			}
			st, err := q.Stats(ctx, u, true)
			if err != nil {
				t.Fatal(err)
			}
			if st.Completed != n || st.Queued+st.Running+st.Failed+st.Cancelled+st.Paused != 0 {
				t.Fatalf("user %q: stats %+v, want %d completed", u, st, n)
			}
		}
		if _, total, err := q.List(ctx, queue.Filter{Limit: 1, Page: 1}); err != nil || total != 7 {
			t.Fatalf("unscoped total %d, %v; want 7", total, err)
		}
	})
}

// A scoped listing's count compares user_id itself, so Postgres can look
// the user's jobs up in idx_agno_jobs_user_id (with sequential scans off, an
// expression of the column would leave only a scan of every job).
func TestList_ScopedCountCanUseTheUserIndex(t *testing.T) {
	d := testdbs.Postgres(t)
	q := openQueue(t, d, testCfg(), complete(d))
	ctx := context.Background()
	conn, err := d.Driver().(db.SQLWriter).SQLWriter().DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `RESET enable_seqscan`)
	query, args := q.ListCountQuery(queue.Filter{UserID: "u1", Scoped: true, Limit: 10, Page: 1})
	rows, err := conn.QueryContext(ctx, `EXPLAIN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.String(), "idx_agno_jobs_user_id") || !strings.Contains(plan.String(), "Index Cond: (user_id =") {
		t.Fatalf("the scoped count does not look the user up in its index:\n%s", plan.String())
	}
}
