package dbtest

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// typedRun is newRun for a run of another type and parent.
func typedRun(sessionID, runID string, typ run.Type, parent string) *db.Run {
	r := NewRun(sessionID, runID)
	r.RunType, r.ParentRunID = typ, parent
	switch typ {
	case run.TypeTeam:
		r.AgentID, r.TeamID = "", "team-1"
	case run.TypeWorkflow:
		r.AgentID, r.WorkflowID = "", "wf-1"
	}
	return r
}

// firstRunIDs maps session ids to the run ids FirstRuns answers.
func firstRunIDs(t *testing.T, got map[string]db.Run, err error) map[string]string {
	t.Helper()
	noErr(t, err)
	out := map[string]string{}
	for sid, r := range got {
		if r.SessionID != sid || len(r.RunData) == 0 {
			t.Errorf("session %s: run %+v", sid, r)
		}
		out[sid] = r.RunID
	}
	return out
}

var firstRunTests = map[string]func(t *testing.T, d *db.DB){
	"FirstRuns_OnePerSessionOfTheSessionsOwnType": func(t *testing.T, d *db.DB) {
		sessions := []db.Session{
			*mustSession(t, bg, d, db.Session{SessionID: "agent-s", SessionType: run.TypeAgent}),
			*mustSession(t, bg, d, db.Session{SessionID: "team-s", SessionType: run.TypeTeam}),
			*mustSession(t, bg, d, db.Session{SessionID: "wf-s", SessionType: run.TypeWorkflow}),
			*mustSession(t, bg, d, db.Session{SessionID: "empty-s", SessionType: run.TypeAgent}),
			*mustSession(t, bg, d, db.Session{SessionID: "members-only", SessionType: run.TypeTeam}),
		}
		mustRun(t, bg, d, NewRun("agent-s", "a1"))
		mustRun(t, bg, d, NewRun("agent-s", "a2"))
		// A team's member runs are usually stored before the team run.
		mustRun(t, bg, d, typedRun("team-s", "member-1", run.TypeAgent, "t1"))
		mustRun(t, bg, d, typedRun("team-s", "t1", run.TypeTeam, ""))
		mustRun(t, bg, d, typedRun("team-s", "t2", run.TypeTeam, ""))
		mustRun(t, bg, d, typedRun("wf-s", "step-1", run.TypeAgent, "w1"))
		mustRun(t, bg, d, typedRun("wf-s", "w1", run.TypeWorkflow, ""))
		mustRun(t, bg, d, typedRun("members-only", "member-2", run.TypeAgent, "gone"))
		got, err := d.FirstRuns(bg, append(sessions, db.Session{SessionID: "missing", SessionType: run.TypeAgent}))
		equal(t, "first runs", firstRunIDs(t, got, err), map[string]string{"agent-s": "a1", "team-s": "t1", "wf-s": "w1"})
		none, err := d.FirstRuns(bg, nil)
		equal(t, "no sessions", len(firstRunIDs(t, none, err)), 0)
	},
	"FirstRuns_FollowsRunIndexNotCreationTime": func(t *testing.T, d *db.DB) {
		s := mustSession(t, bg, d, db.Session{SessionID: "s1"})
		late := NewRun("s1", "late-but-first")
		late.CreatedAt = 2000
		mustRun(t, bg, d, late)
		early := NewRun("s1", "early-but-second")
		early.CreatedAt = 1000
		mustRun(t, bg, d, early)
		got, err := d.FirstRuns(bg, []db.Session{*s})
		equal(t, "first run", firstRunIDs(t, got, err), map[string]string{"s1": "late-but-first"})
	},
	"FirstRuns_AppliesTheUserScope": func(t *testing.T, d *db.DB) {
		alice, bob := db.WithUserScope(bg, "alice"), db.WithUserScope(bg, "bob")
		sa := mustSession(t, alice, d, db.Session{SessionID: "sa"})
		sb := mustSession(t, bob, d, db.Session{SessionID: "sb"})
		mustRun(t, alice, d, NewRun("sa", "ra"))
		mustRun(t, bob, d, NewRun("sb", "rb"))
		both := []db.Session{*sa, *sb}
		got, err := d.FirstRuns(alice, both)
		equal(t, "alice sees", firstRunIDs(t, got, err), map[string]string{"sa": "ra"})
		got, err = d.FirstRuns(bg, both)
		ids := firstRunIDs(t, got, err)
		equal(t, "unscoped sees", slices.Sorted(maps.Values(ids)), []string{"ra", "rb"})
	},
	"FirstRuns_ManySessionsInOneCall": func(t *testing.T, d *db.DB) {
		var sessions []db.Session
		want := map[string]string{}
		for i := range 600 {
			sid := fmt.Sprintf("s-%03d", i)
			sessions = append(sessions, db.Session{SessionID: sid, SessionType: run.TypeAgent})
			if i%100 == 0 {
				mustSession(t, bg, d, sessions[len(sessions)-1])
				mustRun(t, bg, d, NewRun(sid, "r-"+sid))
				want[sid] = "r-" + sid
			}
		}
		got, err := d.FirstRuns(bg, sessions)
		equal(t, "first runs across chunks", firstRunIDs(t, got, err), want)
	},
}
