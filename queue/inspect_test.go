package queue_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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

// List's total is exact while fewer than ListCountAhead jobs follow the
// page, and past that the page's end plus ListCountAhead (it still says
// that a next page exists); a page that is not full says the exact total.
func TestList_TotalIsCountedAtMostListCountAheadPastThePage(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		q := openUnstarted(t, d)
		const n = 25000
		fillJobs(t, d, n)
		ctx := context.Background()
		st, err := q.Stats(ctx, "", false)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			f         queue.Filter
			jobs, max int
		}{
			// Bounded: 20 + ListCountAhead of 25,000.
			{queue.Filter{Limit: 20, Page: 1}, 20, 20 + queue.ListCountAhead},
			{queue.Filter{Limit: 20, Page: 2}, 20, 40 + queue.ListCountAhead},
			{queue.Filter{Status: queue.StatusCompleted, Limit: 20, Page: 1}, 20, 20 + queue.ListCountAhead},
			{queue.Filter{Limit: 20, Page: 700}, 20, 700*20 + queue.ListCountAhead},
			// Exact: fewer follow.
			{queue.Filter{Limit: 20, Page: 800}, 20, n},
			{queue.Filter{Status: queue.StatusFailed, Limit: 20, Page: 1}, 20, st.Failed},
			{queue.Filter{UserID: "u7", Scoped: true, Limit: 20, Page: 1}, 20, n / 50},
			// The last page, not full; a page past the end.
			{queue.Filter{Limit: 30, Page: n/30 + 1}, n % 30, n},
			{queue.Filter{Status: queue.StatusFailed, Limit: 20, Page: 1000}, 0, st.Failed},
			{queue.Filter{Status: queue.StatusPaused, Limit: 20, Page: 1}, 0, 0},
		} {
			jobs, total, err := q.List(ctx, c.f)
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != c.jobs || total != c.max {
				t.Errorf("%+v: %d jobs, total %d; want %d jobs, total %d", c.f, len(jobs), total, c.jobs, c.max)
			}
		}
	})
}

// The oldest queued age measures the backlog: a job waiting out its retry
// delay does not count before the delay ends, and a job requeued long
// after its creation counts from its requeue.
func TestStats_OldestQueuedAgeCountsFromWhenAJobCouldRun(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		q := openUnstarted(t, d)
		ctx := context.Background()
		for _, id := range []string{"requeued", "retrying", "waiting"} {
			s, r, j := pending(id, "u1")
			if _, _, err := q.Enqueue(ctx, s, r, j); err != nil {
				t.Fatal(err)
			}
		}
		w := d.Driver().(db.SQLWriter).SQLWriter()
		table := `"agno_jobs"`
		if w.Dialect == "postgres" {
			table = `"` + w.Schema + `"."agno_jobs"`
		}
		now := time.Now().Unix()
		for id, at := range map[string][2]int64{
			"requeued": {now - 86400, now - 5},  // created a day ago, requeued 5 s ago
			"retrying": {now - 600, now + 3600}, // its retry delay ends in an hour
			"waiting":  {now - 120, now - 120},  // queued two minutes ago, never taken
		} {
			stmt := `UPDATE ` + table + ` SET created_at = ` + fmt.Sprint(at[0]) + `, available_at = ` + fmt.Sprint(at[1]) + ` WHERE id = '` + id + `'`
			if _, err := w.DB.ExecContext(ctx, stmt); err != nil {
				t.Fatal(err)
			}
		}
		for _, scoped := range []bool{false, true} {
			st, err := q.Stats(ctx, "u1", scoped)
			if err != nil {
				t.Fatal(err)
			}
			// 120 s, plus the seconds this test took to get here.
			if st.Queued != 3 || st.OldestQueuedAgeSeconds < 120 || st.OldestQueuedAgeSeconds > 600 {
				t.Errorf("scoped %v: stats %+v; want 3 queued, the oldest waiting about 120 s", scoped, st)
			}
		}
		if st, err := q.Stats(ctx, "u2", true); err != nil || st.Queued != 0 || st.OldestQueuedAgeSeconds != 0 {
			t.Errorf("another user's stats %+v, %v; want nothing queued", st, err)
		}
	})
}
