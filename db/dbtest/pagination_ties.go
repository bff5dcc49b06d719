package dbtest

import (
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db"
)

func init() {
	sqlTests["GetRuns_DeepPagesKeepTieOrder"] = deepPagesKeepTieOrder
}

// deepPagesKeepTieOrder stores runs whose run_index repeats (as migrated or
// caller-indexed rows can) with created_at out of order, and checks that
// every page by number, in both orders and at several sizes, is exactly the
// matching slice of the full listing (run_index, then created_at, then
// run_id).
func deepPagesKeepTieOrder(t *testing.T, d *db.DB) {
	mustSession(t, bg, d, db.Session{SessionID: "s"})
	for i := range 40 {
		r := newRun("s", fmt.Sprintf("r%02d", i))
		idx := int64(i / 3 * 2) // groups of three: 0,0,0,2,2,2,4,…
		if i%7 == 0 {
			idx = int64(i/3*2 + 1) // a few singletons in between
		}
		r.RunIndex = &idx
		r.CreatedAt = int64(1000 - i%5) // ties broken by created_at, then run_id
		mustRun(t, bg, d, r)
	}
	for _, order := range []string{db.Asc, db.Desc} {
		all, _, err := d.GetRuns(bg, db.RunFilter{SessionID: "s", Limit: 100, Page: 1, SortOrder: order})
		noErr(t, err)
		want := runIDs(all)
		for _, limit := range []int{1, 2, 3, 4, 7} {
			for page := 1; (page-1)*limit <= len(want); page++ {
				got, _, err := d.GetRuns(bg, db.RunFilter{SessionID: "s", Limit: limit, Page: page, SortOrder: order})
				noErr(t, err)
				lo, hi := min((page-1)*limit, len(want)), min(page*limit, len(want))
				equal(t, fmt.Sprintf("%s limit %d page %d", order, limit, page), runIDs(got), append([]string{}, want[lo:hi]...))
			}
		}
	}
}
