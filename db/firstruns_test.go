package db_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/run"
)

// plainDriver hides every optional ability of the driver it wraps.
type plainDriver struct{ db.Driver }

// TestFirstRuns_DriversWithoutTheAbilityAnswerTheSame: the front's fallback
// (one bounded GetRuns per session) finds the same runs as the driver's query.
func TestFirstRuns_DriversWithoutTheAbilityAnswerTheSame(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	drv := memory.New()
	fast, slow := db.New("fast", drv), db.New("slow", plainDriver{drv})
	if _, ok := slow.Driver().(db.FirstRunReader); ok {
		t.Fatal("the wrapper still offers FirstRuns")
	}
	put := func(sid string, typ run.Type, runID string, runType run.Type, parent string) {
		t.Helper()
		data, _ := json.Marshal(map[string]string{"run_id": runID})
		if _, err := fast.UpsertSession(ctx, &db.Session{SessionID: sid, SessionType: typ}); err != nil {
			t.Fatal(err)
		}
		if _, err := fast.UpsertRun(ctx, &db.Run{RunID: runID, SessionID: sid, RunType: runType, ParentRunID: parent, RunData: data}); err != nil {
			t.Fatal(err)
		}
	}
	put("team", run.TypeTeam, "member", run.TypeAgent, "t1")
	put("team", run.TypeTeam, "t1", run.TypeTeam, "")
	put("agent", run.TypeAgent, "a1", run.TypeAgent, "")
	put("agent", run.TypeAgent, "a2", run.TypeAgent, "")
	sessions := []db.Session{{SessionID: "team", SessionType: run.TypeTeam}, {SessionID: "agent", SessionType: run.TypeAgent},
		{SessionID: "none", SessionType: run.TypeWorkflow}}
	want, err := fast.FirstRuns(ctx, sessions)
	if err != nil {
		t.Fatal(err)
	}
	got, err := slow.FirstRuns(ctx, sessions)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["team"].RunID != "t1" || got["agent"].RunID != "a1" || len(want) != len(got) ||
		want["team"].RunID != got["team"].RunID || want["agent"].RunID != got["agent"].RunID {
		t.Errorf("fallback = %v, driver = %v", got, want)
	}
}
