package team

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// TestTeam_MemoryAndSummaryAreTheTeams: a team with memory settings stores
// the user's memories with its team id, writes the team session's summary
// and streams the Team-prefixed events.
func TestTeam_MemoryAndSummaryAreTheTeams(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	w, err := agent.New(agent.Config{ID: "writer", Model: scripted.Reply("hello")})
	if err != nil {
		t.Fatal(err)
	}
	tm, err := New(Config{ID: "t1", Model: leaderScript("writer"), Members: []*agent.Agent{w}, DB: d,
		MemoryConfig: agent.MemoryConfig{UpdateMemoryOnRun: true, EnableSessionSummaries: true,
			MemoryModel:         scripted.Reply(`{"updates":[{"op":"add","memory_id":"","memory":"wants greetings","topics":[]}]}`),
			SessionSummaryModel: scripted.Reply(`{"summary":"The team greeted the user.","topics":[]}`)}})
	if err != nil {
		t.Fatal(err)
	}
	var names []run.EventType
	for ev, err := range tm.Stream(context.Background(), run.TextInput("greet me"), agent.WithUserID("u1"), agent.WithSessionID("s1")) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, ev.Event)
	}
	joined := ""
	for _, n := range names {
		joined += string(n) + " "
	}
	for _, want := range []string{"TeamMemoryUpdateStarted", "TeamMemoryUpdateCompleted", "TeamSessionSummaryStarted", "TeamSessionSummaryCompleted"} {
		if !strings.Contains(joined, want+" ") {
			t.Fatalf("events %s lack %s", joined, want)
		}
	}
	ms, _, err := d.ListMemories(context.Background(), db.MemoryFilter{UserID: "u1", Limit: 10, Page: 1})
	if err != nil || len(ms) != 1 || ms[0].TeamID != "t1" || ms[0].AgentID != "" {
		t.Fatalf("memories = %+v, %v", ms, err)
	}
	s, err := d.GetSession(context.Background(), "s1")
	if err != nil || s.SessionType != run.TypeTeam || !strings.Contains(string(s.Summary), "The team greeted the user.") {
		t.Fatalf("session = %+v, %v", s, err)
	}
}
