package team

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
)

// A continue that does not resolve a member's requirement (none given, or
// only another member's) leaves that member run PAUSED and the team run
// PAUSED on it, with the requirement still to resolve: the team run did not
// complete over a member run nobody could continue any more, nor did the
// tool run unconfirmed. A later continue with the resolution finishes both.
func TestPause_ContinueWithoutTheMembersResolutionStaysPaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name     string
		mode     Mode
		nested   bool
		memberID string
	}{{"coordinate", ModeCoordinate, false, "ops"}, {"broadcast", ModeBroadcast, false, "ops"}, {"nested", ModeCoordinate, true, "crew"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := openDB(t)
			var ran int32
			leader := script(call(ToolDelegate, map[string]any{"member_id": "ops", "task": "deploy v2"}), answer("ops deployed v2"))
			if c.mode == ModeBroadcast {
				leader = script(call(ToolDelegateAll, map[string]any{"task": "deploy v2"}), answer("ops deployed v2"))
			}
			tm := opsTeam(t, d, c.mode, &ran, leader)
			if c.nested {
				tm = mustTeam(t, Config{ID: "org", Model: script(call(ToolDelegate, map[string]any{"member_id": "crew", "task": "deploy"}), answer("org deployed")), Teams: []*Team{tm}, DB: d})
			}
			paused, err := tm.Run(ctx, run.TextInput("ship it"), agent.WithSessionID("s"))
			if err != nil || paused.Status != run.StatusPaused || len(paused.Requirements) != 1 {
				t.Fatalf("first leg %+v, %v", paused, err)
			}
			memberRun := paused.Requirements[0].MemberRunID
			again, err := tm.ContinueRun(ctx, paused)
			if err != nil || again.Status != run.StatusPaused {
				t.Fatalf("continued without the resolution: %v, %v; want PAUSED again", again.Status, err)
			}
			if len(again.Requirements) != 1 || again.Requirements[0].MemberRunID != memberRun || again.Requirements[0].MemberAgentID != c.memberID {
				t.Fatalf("requirements after the unresolved continue: %+v", again.Requirements)
			}
			for _, r := range rowsOf(t, d, "s") {
				if r.Status != run.StatusPaused {
					t.Errorf("after the unresolved continue, row %s (%s%s) is %s", r.RunID, r.AgentID, r.TeamID, r.Status)
				}
			}
			if ran != 0 {
				t.Fatalf("the tool ran %d times unconfirmed", ran)
			}
			row, err := d.GetRun(ctx, paused.RunID)
			if err != nil {
				t.Fatal(err)
			}
			stored, _ := row.Output()
			out, err := tm.ContinueRun(ctx, stored, agent.WithRequirements(confirmAll(stored.Requirements)))
			if err != nil || out.Status != run.StatusCompleted || ran != 1 {
				t.Fatalf("continued with the resolution: %v, %v, ran %d", out.Status, err, ran)
			}
			for _, r := range rowsOf(t, d, "s") {
				if r.Status != run.StatusCompleted {
					t.Errorf("row %s (%s%s) is %s", r.RunID, r.AgentID, r.TeamID, r.Status)
				}
			}
		})
	}
}
