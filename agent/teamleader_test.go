package agent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

func TestTeamLeader_RunIsStoredAndStreamedAsATeamRun(t *testing.T) {
	t.Parallel()
	store := db.New("", memory.New())
	hook := func(context.Context) []json.RawMessage { return []json.RawMessage{json.RawMessage(`{"run_id":"m1"}`)} }
	a := mustAgent(t, Config{ID: "t1", Name: "Team", Model: scripted.Reply("done"), DB: store, StoreEvents: true,
		TeamLeader: &TeamLeader{MemberResponses: hook}})
	evs := collect(t, a.Stream(context.Background(), run.TextInput("hi"), WithSessionID("s")))
	if evs[0].Event != "TeamRunStarted" || evs[len(evs)-1].Event != "TeamRunCompleted" {
		t.Fatalf("events = %v", names(evs))
	}
	for _, e := range evs {
		if e.TeamID != "t1" || e.TeamName != "Team" || e.AgentID != "" {
			t.Errorf("event %+v", e)
		}
	}
	rows, _, err := store.GetRuns(context.Background(), db.RunFilter{SessionID: "s", Limit: 10, Page: 1})
	if err != nil || len(rows) != 1 {
		t.Fatalf("rows = %v, %v", rows, err)
	}
	r := rows[0]
	out, _ := r.Output()
	if r.RunType != run.TypeTeam || r.TeamID != "t1" || r.AgentID != "" || len(out.MemberResponses) != 1 {
		t.Errorf("row = %+v, output = %+v", r, out)
	}
	for _, e := range out.Events {
		if e.Event == "TeamRunContent" {
			t.Errorf("a content delta was stored: %+v", e)
		}
	}
	s, err := store.GetSession(context.Background(), "s")
	if err != nil || s.SessionType != run.TypeTeam || s.TeamID != "t1" || len(s.TeamData) == 0 || len(s.AgentData) != 0 {
		t.Errorf("session = %+v, %v", s, err)
	}
}

func TestParentRunID_LeavesAnExistingSessionToItsOwner(t *testing.T) {
	t.Parallel()
	store := db.New("", memory.New())
	ctx := context.Background()
	if _, err := store.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeTeam, TeamID: "t1"}); err != nil {
		t.Fatal(err)
	}
	a := mustAgent(t, Config{ID: "member", Model: scripted.Reply("ok"), DB: store})
	if _, err := a.Run(ctx, run.TextInput("task"), WithSessionID("s"), WithParentRunID("team-run")); err != nil {
		t.Fatal(err)
	}
	s, err := store.GetSession(ctx, "s")
	if err != nil || s.SessionType != run.TypeTeam || s.TeamID != "t1" || s.AgentID != "" {
		t.Errorf("session = %+v, %v", s, err)
	}
	// A member run in a new session still creates it: its row references it.
	if _, err := a.Run(ctx, run.TextInput("task"), WithSessionID("new"), WithParentRunID("team-run")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.GetSession(ctx, "new"); err != nil {
		t.Errorf("new session: %v", err)
	}
}

func TestResolveOptions_ReturnsWhatTheOptionsSet(t *testing.T) {
	t.Parallel()
	o := ResolveOptions(WithSessionID("s"), WithUserID("u"), WithRunID("r"), WithParentRunID("p"), WithMetadata(map[string]any{"k": 1}))
	if o.SessionID != "s" || o.UserID != "u" || o.RunID != "r" || o.ParentRunID != "p" || o.Metadata["k"] != 1 {
		t.Errorf("options = %+v", o)
	}
}
