package dbtest

import (
	"errors"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

var paginationTests = map[string]func(t *testing.T, d *db.DB){
	"GetRuns_PagesInRunIndexOrder": func(t *testing.T, d *db.DB) {
		seedRuns(t, d, "s", 7)
		cases := []struct {
			name        string
			limit, page int
			sortBy      string
			order       string
			want        []string
		}{
			{"default order first page", 3, 1, "", "", ids("s", 0, 2)},
			{"middle page", 3, 2, "", "", ids("s", 3, 5)},
			{"last partial page", 3, 3, "", "", ids("s", 6, 6)},
			{"beyond last page", 3, 4, "", "", nil},
			{"far beyond last page", 3, 1000, "", "", nil},
			{"descending second page", 3, 2, "run_index", db.Desc, ids("s", 3, 1)},
			{"descending last page", 3, 3, "run_index", db.Desc, ids("s", 0, 0)},
			{"limit larger than session", 100, 1, "", "", ids("s", 0, 6)},
			{"limit one deep page", 1, 7, "", "", ids("s", 6, 6)},
			{"created_at ascending", 2, 2, "created_at", db.Asc, ids("s", 2, 3)},
			{"created_at descending", 2, 1, "created_at", db.Desc, ids("s", 6, 5)},
			{"updated_at", 7, 1, "updated_at", db.Asc, nil},
		}
		for _, c := range cases {
			got, total, err := d.GetRuns(bg, db.RunFilter{SessionID: "s", Limit: c.limit, Page: c.page, SortBy: c.sortBy, SortOrder: c.order})
			noErr(t, err)
			equal(t, c.name+" total without WithTotal", total, -1)
			if c.sortBy == "updated_at" {
				equal(t, c.name+" count", len(got), 7)
				continue
			}
			if c.want == nil {
				c.want = []string{}
			}
			equal(t, c.name, runIDs(got), c.want)
		}
	},
	"GetRuns_PagesStayExactAfterDeletes": func(t *testing.T, d *db.DB) {
		seedRuns(t, d, "s", 10)
		noErr(t, d.DeleteRun(bg, "s-r2"))
		noErr(t, d.DeleteRun(bg, "s-r3"))
		want := [][]string{{"s-r0", "s-r1", "s-r4"}, {"s-r5", "s-r6", "s-r7"}, {"s-r8", "s-r9"}, {}}
		for i, w := range want {
			got, total, err := d.GetRuns(bg, db.RunFilter{SessionID: "s", Limit: 3, Page: i + 1, WithTotal: true})
			noErr(t, err)
			equal(t, "total", total, 8)
			equal(t, "page", runIDs(got), w)
		}
	},
	"GetRuns_KeysetCursorWalksEverySession": func(t *testing.T, d *db.DB) {
		seedRuns(t, d, "s", 10)
		noErr(t, d.DeleteRun(bg, "s-r4"))
		for _, order := range []string{db.Asc, db.Desc} {
			var seen []string
			var after *int64
			for range 10 {
				got, total, err := d.GetRuns(bg, db.RunFilter{SessionID: "s", Limit: 3, Page: 1, SortOrder: order, AfterRunIndex: after, WithTotal: true})
				noErr(t, err)
				equal(t, order+" total ignores the cursor", total, 9)
				if len(got) == 0 {
					break
				}
				seen = append(seen, runIDs(got)...)
				after = got[len(got)-1].RunIndex
			}
			want := []string{"s-r0", "s-r1", "s-r2", "s-r3", "s-r5", "s-r6", "s-r7", "s-r8", "s-r9"}
			if order == db.Desc {
				for i, j := 0, len(want)-1; i < j; i, j = i+1, j-1 {
					want[i], want[j] = want[j], want[i]
				}
			}
			equal(t, order+" walk", seen, want)
		}
		idx := int64(1)
		for name, f := range map[string]db.RunFilter{
			"cursor with page 2":     {SessionID: "s", Limit: 3, Page: 2, AfterRunIndex: &idx},
			"cursor with created_at": {SessionID: "s", Limit: 3, Page: 1, SortBy: "created_at", AfterRunIndex: &idx},
		} {
			_, _, err := d.GetRuns(bg, f)
			if !errors.Is(err, db.ErrInvalidFilter) {
				t.Fatalf("%s: error = %v, want ErrInvalidFilter", name, err)
			}
		}
	},
	"GetRuns_RejectsInvalidFilter": func(t *testing.T, d *db.DB) {
		cases := map[string]db.RunFilter{
			"limit zero":       {SessionID: "s", Limit: 0, Page: 1},
			"negative limit":   {SessionID: "s", Limit: -1, Page: 1},
			"page zero":        {SessionID: "s", Limit: 5, Page: 0},
			"unknown sort":     {SessionID: "s", Limit: 5, Page: 1, SortBy: "run_data"},
			"unknown order":    {SessionID: "s", Limit: 5, Page: 1, SortOrder: "sideways"},
			"injection in col": {SessionID: "s", Limit: 5, Page: 1, SortBy: "run_index; DROP TABLE x"},
		}
		for name, f := range cases {
			_, _, err := d.GetRuns(bg, f)
			if !errors.Is(err, db.ErrInvalidFilter) {
				t.Fatalf("%s: error = %v, want ErrInvalidFilter", name, err)
			}
		}
	},
	"GetRuns_TotalCountsAllMatches": func(t *testing.T, d *db.DB) {
		seedRuns(t, d, "s", 5)
		got, total, err := d.GetRuns(bg, db.RunFilter{SessionID: "s", Limit: 2, Page: 2, WithTotal: true, Statuses: []run.Status{run.StatusCompleted}})
		noErr(t, err)
		equal(t, "page", runIDs(got), ids("s", 2, 3))
		equal(t, "total", total, 5)
	},
}
