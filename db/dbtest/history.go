package dbtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

var historyTests = map[string]func(t *testing.T, d *db.DB){
	// The caller names runs it holds; a SQL backend leaves their run_data
	// out while the row is unchanged and returns it once it changed (a
	// later updated_at, or another size where the backend checks it).
	"HistoryRuns_CachedRunsLeaveRunDataOut": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "s"})
		var stored []*db.Run
		for i := range 4 {
			stored = append(stored, mustRun(t, bg, d, NewRun("s", fmt.Sprintf("c%d", i))))
		}
		_, sqlBackend := d.Driver().(db.SQLWriter)
		cached := []db.CachedRun{
			{RunID: "c1", UpdatedAt: stored[1].UpdatedAt, Size: len(stored[1].RunData)},
			{RunID: "c2", UpdatedAt: stored[2].UpdatedAt - 1, Size: len(stored[2].RunData)}, // stale: another writer's update
			{RunID: "c3", UpdatedAt: stored[3].UpdatedAt, Size: len(stored[3].RunData)},
			{RunID: "other", UpdatedAt: stored[3].UpdatedAt, Size: 10},
		}
		got, err := d.HistoryRuns(bg, db.HistoryQuery{SessionID: "s", Limit: 3, Cached: cached})
		noErr(t, err)
		equal(t, "runs", runIDs(got), []string{"c1", "c2", "c3"})
		for _, r := range got {
			omit := r.RunID != "c2" && sqlBackend
			if omit != (r.RunData == nil) {
				t.Fatalf("run %s: run_data left out = %v, want %v", r.RunID, r.RunData == nil, omit)
			}
			if r.RunData != nil {
				jsonEqual(t, "run_data of "+r.RunID, r.RunData, stored[map[string]int{"c1": 1, "c2": 2, "c3": 3}[r.RunID]].RunData)
			}
			if r.RunIndex == nil || r.UpdatedAt == 0 {
				t.Fatalf("run %s: metadata missing: %+v", r.RunID, r)
			}
		}
		// c3 rewritten in the same second with other content: where the
		// backend checks the size, its run_data comes back.
		upd := NewRun("s", "c3")
		upd.RunData = []byte(`{"run_id":"c3","content":"rewritten by another writer, longer than before"}`)
		upd.UpdatedAt = stored[3].UpdatedAt
		mustRun(t, bg, d, upd)
		got, err = d.HistoryRuns(bg, db.HistoryQuery{SessionID: "s", Limit: 1, Cached: cached[2:3]})
		noErr(t, err)
		equal(t, "runs", runIDs(got), []string{"c3"})
		sizeChecked := d.Driver().Dialect() == "sqlite" // the dialects with a ByteLength
		if sizeChecked && got[0].RunData == nil {
			t.Fatal("a same-second rewrite of another size was taken for the cached run")
		}
		if got[0].RunData != nil {
			jsonEqual(t, "rewritten run_data", got[0].RunData, upd.RunData)
		}
	},
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
			r := NewRun("s", k.id)
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
			{"member runs too", db.HistoryQuery{SessionID: "s", Limit: 10, MemberRuns: true}, []string{"r0", "r2", "r3", "r6", "r7"}},
			{"a member's own", db.HistoryQuery{SessionID: "s", AgentID: "member", Limit: 10, MemberRuns: true}, []string{"r2"}},
			{"a member's own, top-level only", db.HistoryQuery{SessionID: "s", AgentID: "member", Limit: 10}, []string{}},
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
			r := NewRun("s", fmt.Sprintf("t%d", i))
			r.RunType, r.AgentID, r.TeamID = run.TypeTeam, "", "team"
			mustRun(t, bg, d, r)
		}
		got, err := d.HistoryRuns(bg, db.HistoryQuery{SessionID: "s", TeamID: "team", Limit: 2})
		noErr(t, err)
		equal(t, "team history", runIDs(got), []string{"t1", "t2"})
	},
	// SessionHistory answers what GetSession then HistoryRuns answer, for
	// every query shape; SQL backends do it in one statement.
	"SessionHistory_MatchesGetSessionAndHistoryRuns": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "s", UserID: "alice", SessionData: json.RawMessage(`{"session_state":{"n":1}}`)})
		mustSession(t, bg, d, db.Session{SessionID: "empty"})
		var stored []*db.Run
		for i, st := range []run.Status{run.StatusCompleted, run.StatusPaused, run.StatusCompleted, run.StatusError, run.StatusCompleted, run.StatusCompleted} {
			r := NewRun("s", fmt.Sprintf("h%d", i))
			r.Status, r.UserID = st, "alice"
			if i == 4 {
				r.ParentRunID = "h5"
			}
			stored = append(stored, mustRun(t, bg, d, r))
		}
		cached := []db.CachedRun{{RunID: "h2", UpdatedAt: stored[2].UpdatedAt, Size: len(stored[2].RunData)}}
		// Two runs share a run_index: the order then needs the tie-breakers.
		mustSession(t, bg, d, db.Session{SessionID: "tie"})
		for i, idx := range []int64{0, 1, 1, 2} {
			r := NewRun("tie", fmt.Sprintf("t%d", i))
			r.RunIndex = &idx
			mustRun(t, bg, d, r)
		}
		alice, bob := db.WithUserScope(bg, "alice"), db.WithUserScope(bg, "bob")
		for _, c := range []struct {
			name string
			ctx  context.Context
			q    db.HistoryQuery
		}{
			{"last two", bg, db.HistoryQuery{SessionID: "s", Limit: 2}},
			{"all", bg, db.HistoryQuery{SessionID: "s", Limit: 10}},
			{"cached", bg, db.HistoryQuery{SessionID: "s", Limit: 3, Cached: cached}},
			{"one agent, scoped", alice, db.HistoryQuery{SessionID: "s", AgentID: "agent-1", Limit: 10}},
			{"member runs", bg, db.HistoryQuery{SessionID: "s", Limit: 10, MemberRuns: true}},
			{"member runs, cached", bg, db.HistoryQuery{SessionID: "s", Limit: 3, MemberRuns: true, Cached: cached}},
			{"no runs", bg, db.HistoryQuery{SessionID: "empty", Limit: 3}},
			{"tie", bg, db.HistoryQuery{SessionID: "tie", Limit: 2}},
			{"tie past the limit", bg, db.HistoryQuery{SessionID: "tie", Limit: 1}},
		} {
			wantS, err := d.GetSession(c.ctx, c.q.SessionID)
			noErr(t, err)
			wantR, err := d.HistoryRuns(c.ctx, c.q)
			noErr(t, err)
			gotS, gotR, err := d.SessionHistory(c.ctx, c.q)
			noErr(t, err)
			if !reflect.DeepEqual(gotS, wantS) {
				t.Fatalf("%s: session %+v, want %+v", c.name, gotS, wantS)
			}
			if !reflect.DeepEqual(gotR, wantR) {
				t.Fatalf("%s: runs %+v, want %+v", c.name, gotR, wantR)
			}
			gotS, gotRefs, err := d.SessionHistoryRefs(c.ctx, c.q)
			noErr(t, err)
			wantRefs := make([]db.HistoryRef, len(wantR))
			for i, r := range wantR {
				wantRefs[i] = db.HistoryRef{RunID: r.RunID, UpdatedAt: r.UpdatedAt, RunData: r.RunData}
			}
			if !reflect.DeepEqual(gotS, wantS) {
				t.Fatalf("%s: refs' session %+v, want %+v", c.name, gotS, wantS)
			}
			if len(gotRefs) != len(wantRefs) || (len(wantRefs) > 0 && !reflect.DeepEqual(gotRefs, wantRefs)) {
				t.Fatalf("%s: refs %+v, want %+v", c.name, gotRefs, wantRefs)
			}
		}
		for name, ctx := range map[string]context.Context{"missing": bg, "another user's": bob} {
			id := "s"
			if name == "missing" {
				id = "nope"
			}
			s, runs, err := d.SessionHistory(ctx, db.HistoryQuery{SessionID: id, Limit: 3})
			if !errors.Is(err, db.ErrNotFound) || s != nil || len(runs) != 0 {
				t.Fatalf("%s session: %v, %v, %v; want ErrNotFound", name, s, runs, err)
			}
			s, refs, err := d.SessionHistoryRefs(ctx, db.HistoryQuery{SessionID: id, Limit: 3})
			if !errors.Is(err, db.ErrNotFound) || s != nil || len(refs) != 0 {
				t.Fatalf("%s session, refs: %v, %v, %v; want ErrNotFound", name, s, refs, err)
			}
		}
		if _, sqlBackend := d.Driver().(db.SQLWriter); sqlBackend {
			if _, ok := d.Driver().(db.SessionHistoryReader); !ok {
				t.Fatal("a SQL driver without SessionHistoryReader: a turn's load costs two statements")
			}
			if _, ok := d.Driver().(db.SessionHistoryRefReader); !ok {
				t.Fatal("a SQL driver without SessionHistoryRefReader: a turn's load builds full rows")
			}
		}
	},
}
