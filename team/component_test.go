package team

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
)

// TestTeam_IdentityOfLeaderAndMemberRuns: the team gives its leader the
// team's identity, so the team run, its events and the session are the
// team's, while a member's run (and its copy in member_responses) carries
// the member's own agent identity.
func TestTeam_IdentityOfLeaderAndMemberRuns(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	teamID := run.Component{Type: run.TypeTeam, ID: "t1", Name: "Greeters"}
	memberID := run.Component{Type: run.TypeAgent, ID: "writer", Name: "Writer"}
	if f.team.Component() != teamID {
		t.Errorf("team component = %+v", f.team.Component())
	}
	var last run.Event
	for ev, err := range f.team.Stream(ctx, run.TextInput("greet"), agent.WithSessionID("s")) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.ParentRunID != "" {
			// A forwarded member event: the member's identity and names.
			if ev.AgentID != "writer" || ev.AgentName != "Writer" || ev.TeamID != "" || strings.HasPrefix(string(ev.Event), "Team") {
				t.Errorf("member event %+v", ev)
			}
			continue
		}
		if ev.TeamID != "t1" || ev.TeamName != "Greeters" || ev.AgentID != "" || !strings.HasPrefix(string(ev.Event), "Team") {
			t.Errorf("team event %+v", ev)
		}
		last = ev
	}
	if last.Event != "TeamRunCompleted" {
		t.Fatalf("last event %s", last.Event)
	}
	rows := sessionRuns(t, f.db, "s")
	if len(rows) != 2 {
		t.Fatalf("%d rows", len(rows))
	}
	var teamRun, memberRun *run.Output
	for i := range rows {
		out, err := rows[i].Output()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case rows[i].ProducedBy(teamID):
			teamRun = out
		case rows[i].ProducedBy(memberID):
			memberRun = out
		}
	}
	if teamRun == nil || teamRun.TeamID != "t1" || teamRun.TeamName != "Greeters" || teamRun.AgentID != "" {
		t.Fatalf("team run = %+v", teamRun)
	}
	if memberRun == nil || memberRun.AgentID != "writer" || memberRun.AgentName != "Writer" || memberRun.TeamID != "" || memberRun.ParentRunID != teamRun.RunID {
		t.Fatalf("member run = %+v", memberRun)
	}
	if len(teamRun.MemberResponses) != 1 {
		t.Fatalf("member_responses = %d", len(teamRun.MemberResponses))
	}
	var copied run.Output
	if err := json.Unmarshal(teamRun.MemberResponses[0], &copied); err != nil || copied.AgentID != "writer" || copied.RunID != memberRun.RunID {
		t.Errorf("member response = %+v, %v", copied, err)
	}
	s, err := f.db.GetSession(ctx, "s")
	if err != nil || s.SessionType != run.TypeTeam || s.TeamID != "t1" || s.AgentID != "" {
		t.Errorf("session = %+v, %v", s, err)
	}
}
