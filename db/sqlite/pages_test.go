package sqlite_test

import (
	"slices"
	"testing"

	"github.com/agentryhq/agentry/db"
)

// Legacy rows without a run_index sort first in ascending order on SQLite;
// pages by number over them (and over the boundary to indexed runs) must be
// the matching slices of the full listing, as must the history.
func TestGetRuns_PagesOverNullRunIndex(t *testing.T) {
	t.Parallel()
	d, st := seeded(t, 12)
	if _, err := st.SQL().ExecContext(ctx, "UPDATE agno_runs SET run_index = NULL, created_at = 5 WHERE run_index % 4 = 1"); err != nil {
		t.Fatal(err)
	}
	for _, order := range []string{db.Asc, db.Desc} {
		all, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: "s", Limit: 100, Page: 1, SortOrder: order})
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{1, 2, 5} {
			for page := 1; (page-1)*limit <= len(all); page++ {
				got, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: "s", Limit: limit, Page: page, SortOrder: order})
				if err != nil {
					t.Fatal(err)
				}
				want := all[min((page-1)*limit, len(all)):min(page*limit, len(all))]
				if g, w := ids(got), ids(want); !slices.Equal(g, w) {
					t.Errorf("%s limit %d page %d = %v, want %v", order, limit, page, g, w)
				}
			}
		}
	}
	for limit := 1; limit <= 13; limit++ {
		got, err := d.HistoryRuns(ctx, db.HistoryQuery{SessionID: "s", Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		all, _, _ := d.GetRuns(ctx, db.RunFilter{SessionID: "s", Limit: limit, Page: 1, SortOrder: db.Desc})
		slices.Reverse(all)
		if g, w := ids(got), ids(all); !slices.Equal(g, w) {
			t.Errorf("history limit %d = %v, want %v", limit, g, w)
		}
	}
}

func ids(runs []db.Run) []string {
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.RunID
	}
	return out
}
