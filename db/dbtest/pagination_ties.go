package dbtest

import (
	"fmt"
	"slices"
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
// run_id), as are the history and keyset pages.
func deepPagesKeepTieOrder(t *testing.T, d *db.DB) {
	mustSession(t, bg, d, db.Session{SessionID: "s"})
	for i := range 40 {
		r := NewRun("s", fmt.Sprintf("r%02d", i))
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
		if order == db.Desc {
			// History is the newest runs in the same order, oldest first.
			for limit := 1; limit <= len(want)+1; limit += 2 {
				got, err := d.HistoryRuns(bg, db.HistoryQuery{SessionID: "s", Limit: limit})
				noErr(t, err)
				last := append([]string{}, want[:min(limit, len(want))]...)
				slices.Reverse(last)
				equal(t, fmt.Sprintf("history limit %d", limit), runIDs(got), last)
			}
		}
		// The keyset cursor returns the first rows strictly past a run_index.
		for _, after := range []int64{-1, 0, 1, 2, 13, 26} {
			var past []string
			for _, r := range all {
				if (order == db.Asc && *r.RunIndex > after) || (order == db.Desc && *r.RunIndex < after) {
					past = append(past, r.RunID)
				}
			}
			got, _, err := d.GetRuns(bg, db.RunFilter{SessionID: "s", Limit: 4, Page: 1, SortOrder: order, AfterRunIndex: &after})
			noErr(t, err)
			equal(t, fmt.Sprintf("%s after %d", order, after), runIDs(got), append([]string{}, past[:min(4, len(past))]...))
		}
	}
}
