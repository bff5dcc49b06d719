package dbtest

import (
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

var historyTests = map[string]func(t *testing.T, d *db.DB){
	"HistoryRuns_SkipsUnfinishedAndMemberRuns": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "s"})
		kinds := []struct {
			id     string
			status run.Status
			parent string
			agent  string
		}{
			{"r0", run.StatusCompleted, "", "a"},
			{"r1", run.StatusPaused, "", "a"},
			{"r2", run.StatusCompleted, "r3", "member"},
			{"r3", run.StatusCompleted, "", "a"},
			{"r4", run.StatusCancelled, "", "a"},
			{"r5", run.StatusError, "", "a"},
			{"r6", run.StatusRunning, "", "b"},
			{"r7", run.StatusCompleted, "", "a"},
			{"r8", run.StatusRegenerated, "", "a"},
		}
		for _, k := range kinds {
			r := newRun("s", k.id)
			r.Status, r.ParentRunID, r.AgentID = k.status, k.parent, k.agent
			mustRun(t, bg, d, r)
		}
		cases := []struct {
			name string
			q    db.HistoryQuery
			want []string
		}{
			{"all context runs oldest first", db.HistoryQuery{SessionID: "s", Limit: 10}, []string{"r0", "r3", "r6", "r7"}},
			{"last two", db.HistoryQuery{SessionID: "s", Limit: 2}, []string{"r6", "r7"}},
			{"one agent", db.HistoryQuery{SessionID: "s", AgentID: "a", Limit: 10}, []string{"r0", "r3", "r7"}},
			{"other session", db.HistoryQuery{SessionID: "x", Limit: 10}, []string{}},
		}
		for _, c := range cases {
			got, err := d.HistoryRuns(bg, c.q)
			noErr(t, err)
			equal(t, c.name, runIDs(got), c.want)
		}
	},
	"HistoryRuns_IsBoundedOnLongSessions": func(t *testing.T, d *db.DB) {
		seedRuns(t, d, "s", 60)
		got, err := d.HistoryRuns(bg, db.HistoryQuery{SessionID: "s", Limit: 3})
		noErr(t, err)
		equal(t, "last three", runIDs(got), ids("s", 57, 59))
	},
	"HistoryRuns_RequiresSessionAndLimit": func(t *testing.T, d *db.DB) {
		for _, q := range []db.HistoryQuery{{Limit: 3}, {SessionID: "s"}, {SessionID: "s", Limit: -1}} {
			_, err := d.HistoryRuns(bg, q)
			wantErr(t, err, db.ErrInvalidFilter)
		}
	},
	"HistoryRuns_MatchesTeamRuns": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "s", SessionType: run.TypeTeam})
		for i := range 3 {
			r := newRun("s", fmt.Sprintf("t%d", i))
			r.RunType, r.AgentID, r.TeamID = run.TypeTeam, "", "team"
			mustRun(t, bg, d, r)
		}
		got, err := d.HistoryRuns(bg, db.HistoryQuery{SessionID: "s", TeamID: "team", Limit: 2})
		noErr(t, err)
		equal(t, "team history", runIDs(got), []string{"t1", "t2"})
	},
}
