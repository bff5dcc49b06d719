package dbtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

var runTests = map[string]func(t *testing.T, d *db.DB){
	"UpsertRun_AssignsRunIndexInOrder": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "s1"})
		mustSession(t, bg, d, db.Session{SessionID: "s2"})
		for i, id := range []string{"a", "b", "c"} {
			out := mustRun(t, bg, d, NewRun("s1", id))
			if out.RunIndex == nil || *out.RunIndex != int64(i) {
				t.Fatalf("run %s index = %v, want %d", id, out.RunIndex, i)
			}
		}
		out := mustRun(t, bg, d, NewRun("s2", "other"))
		equal(t, "first index of another session", *out.RunIndex, int64(0))
	},
	"UpsertRun_RoundTripsEveryColumn": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "s1", SessionType: run.TypeTeam})
		in := &db.Run{RunID: "r1", SessionID: "s1", RunType: run.TypeTeam, TeamID: "t", AgentID: "a", WorkflowID: "w",
			UserID: "u", ParentRunID: "p", Status: run.StatusPaused,
			RunData:   json.RawMessage(`{"run_id":"r1","team_id":"t","member_responses":[{"run_id":"m"}],"unknown_field":{"x":[1,"2",null]}}`),
			CreatedAt: 1700000001}
		mustRun(t, bg, d, in)
		got, err := d.GetRun(bg, "r1")
		noErr(t, err)
		equal(t, "columns", []string{got.RunID, got.SessionID, string(got.RunType), got.TeamID, got.AgentID, got.WorkflowID, got.UserID, got.ParentRunID, string(got.Status)},
			[]string{"r1", "s1", "team", "t", "a", "w", "u", "p", "PAUSED"})
		jsonEqual(t, "run_data", got.RunData, in.RunData)
		equal(t, "created_at", got.CreatedAt, int64(1700000001))
		equal(t, "run_index", *got.RunIndex, int64(0))
		if got.UpdatedAt == 0 {
			t.Fatal("updated_at not set")
		}
	},
	"UpsertRun_ConflictUpdatesAndKeepsRunIndex": func(t *testing.T, d *db.DB) {
		seedRuns(t, d, "s1", 3)
		r := NewRun("s1", "s1-r1")
		r.Status, r.RunData, r.ParentRunID, r.CreatedAt = run.StatusError, json.RawMessage(`{"run_id":"s1-r1","content":"v2"}`), "p", 5
		seven := int64(7)
		r.RunIndex = &seven
		out := mustRun(t, bg, d, r)
		equal(t, "returned index", *out.RunIndex, int64(1))
		got, err := d.GetRun(bg, "s1-r1")
		noErr(t, err)
		equal(t, "stored index", *got.RunIndex, int64(1))
		equal(t, "status", got.Status, run.StatusError)
		equal(t, "parent", got.ParentRunID, "p")
		equal(t, "created_at kept", got.CreatedAt, int64(1001))
		jsonEqual(t, "run_data", got.RunData, r.RunData)
		next := mustRun(t, bg, d, NewRun("s1", "new"))
		equal(t, "next index", *next.RunIndex, int64(3))
	},
	"UpsertRun_HonoursExplicitIndexOnInsert": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "s1"})
		r := NewRun("s1", "r")
		five := int64(5)
		r.RunIndex = &five
		equal(t, "explicit", *mustRun(t, bg, d, r).RunIndex, int64(5))
		equal(t, "after explicit", *mustRun(t, bg, d, NewRun("s1", "r2")).RunIndex, int64(6))
	},
	"UpsertRun_ConcurrentWritersGetDistinctIndexes": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "s1"})
		writeConcurrently(t, d, 8, 25, func(w, i int) error {
			_, err := d.UpsertRun(bg, NewRun("s1", fmt.Sprintf("w%d-%d", w, i)))
			return err
		})
	},
	"UpsertRun_RequiresFields": func(t *testing.T, d *db.DB) {
		for name, r := range map[string]*db.Run{
			"run_id":     {SessionID: "s", RunType: run.TypeAgent, RunData: json.RawMessage(`{}`)},
			"session_id": {RunID: "r", RunType: run.TypeAgent, RunData: json.RawMessage(`{}`)},
			"run_type":   {RunID: "r", SessionID: "s", RunData: json.RawMessage(`{}`)},
			"run_data":   {RunID: "r", SessionID: "s", RunType: run.TypeAgent},
		} {
			if _, err := d.UpsertRun(bg, r); !errors.Is(err, db.ErrInvalidRecord) {
				t.Fatalf("missing %s: error = %v, want ErrInvalidRecord", name, err)
			}
		}
	},
	"GetRun_MissingIsNotFound": func(t *testing.T, d *db.DB) {
		_, err := d.GetRun(bg, "nope")
		wantErr(t, err, db.ErrNotFound)
	},
	"DeleteRun_RemovesOneRun": func(t *testing.T, d *db.DB) {
		seedRuns(t, d, "s1", 2)
		noErr(t, d.DeleteRun(bg, "s1-r0"))
		_, err := d.GetRun(bg, "s1-r0")
		wantErr(t, err, db.ErrNotFound)
		wantErr(t, d.DeleteRun(bg, "s1-r0"), db.ErrNotFound)
		_, err = d.GetRun(bg, "s1-r1")
		noErr(t, err)
	},
	"GetRuns_Filters": func(t *testing.T, d *db.DB) {
		mustSession(t, bg, d, db.Session{SessionID: "s1"})
		mustSession(t, bg, d, db.Session{SessionID: "s2", SessionType: run.TypeTeam})
		add := func(id, sid string, mut func(r *db.Run)) {
			r := NewRun(sid, id)
			mut(r)
			mustRun(t, bg, d, r)
		}
		add("a", "s1", func(r *db.Run) {})
		add("b", "s1", func(r *db.Run) { r.Status, r.AgentID = run.StatusError, "agent-2" })
		add("c", "s1", func(r *db.Run) { r.ParentRunID, r.UserID = "a", "u1" })
		add("d", "s2", func(r *db.Run) {
			r.RunType, r.AgentID, r.TeamID, r.Status = run.TypeTeam, "", "team-1", run.StatusPaused
		})
		add("e", "s2", func(r *db.Run) { r.RunType, r.AgentID, r.WorkflowID = run.TypeWorkflow, "", "wf-1" })
		cases := []struct {
			name string
			f    db.RunFilter
			want []string
		}{
			{"session", db.RunFilter{SessionID: "s1"}, []string{"a", "b", "c"}},
			{"agent", db.RunFilter{AgentID: "agent-2"}, []string{"b"}},
			{"team", db.RunFilter{TeamID: "team-1"}, []string{"d"}},
			{"workflow", db.RunFilter{WorkflowID: "wf-1"}, []string{"e"}},
			{"user", db.RunFilter{UserID: "u1"}, []string{"c"}},
			{"parent", db.RunFilter{ParentRunID: "a"}, []string{"c"}},
			{"run type", db.RunFilter{RunType: run.TypeTeam}, []string{"d"}},
			{"statuses", db.RunFilter{Statuses: []run.Status{run.StatusError, run.StatusPaused}}, []string{"b", "d"}},
			{"session and status", db.RunFilter{SessionID: "s1", Statuses: []run.Status{run.StatusCompleted}}, []string{"a", "c"}},
			{"nothing matches", db.RunFilter{SessionID: "s9"}, []string{}},
		}
		for _, c := range cases {
			c.f.Limit, c.f.Page, c.f.WithTotal = 50, 1, true
			got, total, err := d.GetRuns(bg, c.f)
			noErr(t, err)
			equal(t, c.name, sortedIDs(runIDs(got)), c.want)
			equal(t, c.name+" total", total, len(c.want))
		}
	},
}

// writeConcurrently runs writers goroutines that each call write each times
// (w is the writer, i the call), then checks that session s1 holds exactly
// writers*each runs whose run_index values are 0..writers*each-1.
func writeConcurrently(t *testing.T, d *db.DB, writers, each int, write func(w, i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := write(w, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	runs, total, err := d.GetRuns(bg, db.RunFilter{SessionID: "s1", Limit: 1000, Page: 1, WithTotal: true})
	noErr(t, err)
	equal(t, "total", total, writers*each)
	var idx []int
	for _, r := range runs {
		idx = append(idx, int(*r.RunIndex))
	}
	sort.Ints(idx)
	for i, v := range idx {
		if v != i {
			t.Fatalf("indexes are not exactly 0..%d: position %d holds %d", writers*each-1, i, v)
		}
	}
}
