package dbtest

import (
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// RunSQL runs the behaviours specific to the SQL drivers (sqlite, postgres,
// mysql): the runs table's foreign key to sessions, and session paging by
// run_index position. Other drivers need not pass it.
func RunSQL(t *testing.T, open Opener) {
	t.Helper()
	for name, fn := range sqlTests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}

var sqlTests = map[string]func(t *testing.T, d *db.DB){
	"UpsertRun_UnknownSessionIsInvalidRecord": func(t *testing.T, d *db.DB) {
		_, err := d.UpsertRun(bg, &db.Run{RunID: "x", SessionID: "missing", RunType: run.TypeAgent, RunData: json.RawMessage(`{}`)})
		wantErr(t, err, db.ErrInvalidRecord)
	},
	"GetRuns_SessionPagesAreRunIndexPositions": func(t *testing.T, d *db.DB) {
		seedRuns(t, d, "s", 10) // s-r0..s-r9 at run_index 0..9
		noErr(t, d.DeleteRun(bg, "s-r2"))
		noErr(t, d.DeleteRun(bg, "s-r3"))
		cases := []struct {
			name string
			f    db.RunFilter
			want []string
		}{
			{"page holding deleted positions is shorter", db.RunFilter{Limit: 3, Page: 1}, ids("s", 0, 1)},
			{"later page keeps its positions", db.RunFilter{Limit: 3, Page: 2}, ids("s", 4, 5)},
			{"last page", db.RunFilter{Limit: 3, Page: 4}, ids("s", 9, 9)},
			{"beyond last page", db.RunFilter{Limit: 3, Page: 5}, []string{}},
			{"descending from the last position", db.RunFilter{Limit: 3, Page: 3, SortOrder: db.Desc}, ids("s", 1, 1)},
			{"other filters page by offset", db.RunFilter{Limit: 3, Page: 2, Statuses: []run.Status{run.StatusCompleted}}, ids("s", 5, 7)},
			{"created_at order pages by offset", db.RunFilter{Limit: 3, Page: 2, SortBy: "created_at"}, ids("s", 5, 7)},
		}
		for _, c := range cases {
			c.f.SessionID = "s"
			got, _, err := d.GetRuns(bg, c.f)
			noErr(t, err)
			equal(t, c.name, runIDs(got), c.want)
		}
	},
}
