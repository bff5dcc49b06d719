package memory_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// A read-only history read may get the session's own refs; whatever is
// written after it (a newer run, an update in place, an insert before the
// newest run, a delete), the refs it got read as they were, and the next
// read sees the writes.
func TestSessionHistoryRefs_ReadOnlyRefsNotChangedByLaterWrites(t *testing.T) {
	t.Parallel()
	refsText := func(refs []db.HistoryRef) string {
		var b strings.Builder
		for _, r := range refs {
			fmt.Fprintf(&b, "%s@%d:%s ", r.RunID, r.UpdatedAt, r.RunData)
		}
		return b.String()
	}
	withIndex := func(r *db.Run, idx int64) *db.Run { r.RunIndex = &idx; return r }
	writes := []struct {
		name  string
		write func(t *testing.T, ctx context.Context, d *db.DB)
		want  string // run ids of the last 3 history runs after the write
	}{
		{"newer run", func(t *testing.T, ctx context.Context, d *db.DB) {
			mustRun(t, ctx, d, withIndex(runRow("r9", "s1", run.StatusCompleted), 9))
		}, "[r3 r4 r9]"},
		{"update in place", func(t *testing.T, ctx context.Context, d *db.DB) {
			r := runRow("r3", "s1", run.StatusCompleted)
			r.RunData = []byte(`{"run_id":"r3","content":"changed"}`)
			r.UpdatedAt = 99
			mustRun(t, ctx, d, r)
		}, "[r2 r3 r4]"},
		{"leaves history", func(t *testing.T, ctx context.Context, d *db.DB) {
			mustRun(t, ctx, d, runRow("r3", "s1", run.StatusError))
		}, "[r1 r2 r4]"},
		{"insert before the newest", func(t *testing.T, ctx context.Context, d *db.DB) {
			mustRun(t, ctx, d, withIndex(runRow("r3b", "s1", run.StatusCompleted), 7))
		}, "[r3 r3b r4]"},
		{"delete", func(t *testing.T, ctx context.Context, d *db.DB) {
			if err := d.DeleteRun(ctx, "r3"); err != nil {
				t.Fatal(err)
			}
		}, "[r1 r2 r4]"},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			d := newDB(t)
			mustSession(t, ctx, d, session("s1", ""))
			for i, id := range []string{"r0", "r1", "r2", "r3", "r4"} {
				mustRun(t, ctx, d, withIndex(runRow(id, "s1", run.StatusCompleted), int64(2*i)))
			}
			q := db.HistoryQuery{SessionID: "s1", Limit: 3, ReadOnlySession: true}
			_, held, err := d.SessionHistoryRefs(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			_, wider, err := d.SessionHistoryRefs(ctx, db.HistoryQuery{SessionID: "s1", Limit: 10, ReadOnlySession: true})
			if err != nil {
				t.Fatal(err)
			}
			before, beforeWide := refsText(held), refsText(wider)
			w.write(t, ctx, d)
			if after := refsText(held); after != before {
				t.Fatalf("held refs changed:\n%s\n%s", before, after)
			}
			if after := refsText(wider); after != beforeWide {
				t.Fatalf("held refs (limit 10) changed:\n%s\n%s", beforeWide, after)
			}
			_, now, err := d.SessionHistoryRefs(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(ids(now, func(r db.HistoryRef) string { return r.RunID })); got != w.want {
				t.Fatalf("history after the write %s, want %s", got, w.want)
			}
			rows, err := d.HistoryRuns(ctx, db.HistoryQuery{SessionID: "s1", Limit: 3})
			if err != nil {
				t.Fatal(err)
			}
			for i := range rows {
				if now[i].UpdatedAt != rows[i].UpdatedAt || string(now[i].RunData) != string(rows[i].RunData) {
					t.Fatalf("ref %d %+v does not match its run %+v", i, now[i], rows[i])
				}
			}
		})
	}
}

// Readers that keep reading the refs they got while writers add, update and
// delete runs of the same session: under -race, a write into a slot a
// reader holds is reported; without it, a held ref must keep its run's id
// with that run's bytes.
func TestSessionHistoryRefs_ReadOnlyRefsUnderConcurrentWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newDB(t)
	mustSession(t, ctx, d, session("s1", ""))
	for i := range 8 {
		mustRun(t, ctx, d, runRow(fmt.Sprintf("r%02d", i), "s1", run.StatusCompleted))
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				_, refs, err := d.SessionHistoryRefs(ctx, db.HistoryQuery{SessionID: "s1", Limit: 5, ReadOnlySession: true})
				if err != nil {
					t.Error(err)
					return
				}
				for range 3 {
					for _, r := range refs {
						if !strings.Contains(string(r.RunData), `"run_id":"`+r.RunID+`"`) {
							t.Errorf("ref %s holds %s", r.RunID, r.RunData)
							return
						}
					}
				}
			}
		})
	}
	wg.Go(func() {
		for i := 8; i < 108; i++ {
			id := fmt.Sprintf("r%02d", i)
			upd := runRow(id, "s1", run.StatusCompleted)
			upd.RunData = []byte(fmt.Sprintf(`{"run_id":%q,"content":"updated"}`, id))
			for _, r := range []*db.Run{runRow(id, "s1", run.StatusCompleted), upd} {
				if _, err := d.UpsertRun(ctx, r); err != nil {
					t.Error(err)
					return
				}
			}
			if i%3 == 0 {
				if err := d.DeleteRun(ctx, id); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	wg.Wait()
}
