package team

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
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

// A continue cancelled before it reached a paused member run (its context
// done, or CancelRun before the delegation ran again) ends the team run
// CANCELLED and the member runs its pause waited on too, as a team run
// cancelled while its members work does: left PAUSED, they waited for
// nothing and could still be continued on their own, the tool running
// after the team run was cancelled.
func TestPause_ContinueCancelledBeforeTheMemberCancelsItsPausedRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name           string
		mode           Mode
		nested, noTeam bool
		stream         bool
	}{{"coordinate", ModeCoordinate, false, false, false}, {"broadcast", ModeBroadcast, false, false, false},
		{"nested", ModeCoordinate, true, false, false}, {"team without db", ModeCoordinate, false, true, false},
		{"streamed", ModeCoordinate, false, false, true}, {"streamed, team without db", ModeCoordinate, false, true, true}} {
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
			if c.noTeam {
				cfg := tm.Config()
				cfg.DB = nil
				tm = mustTeam(t, cfg)
			}
			paused, err := tm.Run(context.Background(), run.TextInput("ship it"), agent.WithSessionID("s"))
			if err != nil || paused.Status != run.StatusPaused || len(paused.Requirements) != 1 {
				t.Fatalf("first leg %+v, %v", paused, err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var out *run.Output
			if c.stream {
				out = &run.Output{Status: run.StatusCancelled}
				var last run.Event
				for ev := range tm.ContinueStream(ctx, paused, agent.WithRequirements(confirmAll(paused.Requirements))) {
					last = ev
				}
				if last.Event != "TeamRunCancelled" {
					t.Fatalf("continue stream ended with %s", last.Event)
				}
			} else {
				var err error
				out, err = tm.ContinueRun(ctx, paused, agent.WithRequirements(confirmAll(paused.Requirements)))
				if out == nil || out.Status != run.StatusCancelled {
					t.Fatalf("continue = %v, %v; want CANCELLED", out, err)
				}
			}
			rows := rowsOf(t, d, "s")
			if want := map[bool]int{false: 2, true: 3}[c.nested] - map[bool]int{false: 0, true: 1}[c.noTeam]; len(rows) != want {
				t.Fatalf("%d rows, want %d", len(rows), want)
			}
			for _, r := range rows {
				if r.Status != run.StatusCancelled {
					t.Errorf("row %s (%s%s) is %s, want CANCELLED", r.RunID, r.AgentID, r.TeamID, r.Status)
				}
				if o, _ := r.Output(); len(o.Requirements) != 0 {
					t.Errorf("row %s still waits on %d requirements", r.RunID, len(o.Requirements))
				}
			}
			for _, raw := range out.MemberResponses {
				var m run.Output
				if err := json.Unmarshal(raw, &m); err != nil || m.Status != run.StatusCancelled {
					t.Errorf("member response %s is %s (%v)", m.RunID, m.Status, err)
				}
			}
			if ran != 0 {
				t.Errorf("the tool ran %d times after the cancel", ran)
			}
		})
	}
}

// A team continues only its own paused runs, as an agent does: another
// team's paused run (or an agent's) is refused before anything runs; the
// other team's members were run and its run stored as answered by this
// team's leader.
func TestContinueRun_RefusesAnotherComponentsRun(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var ran int32
	crew := opsTeam(t, d, ModeCoordinate, &ran, script(call(ToolDelegate, map[string]any{"member_id": "ops", "task": "deploy"}), answer("crew done")))
	paused, err := crew.Run(context.Background(), run.TextInput("go"), agent.WithSessionID("s"))
	if err != nil || paused.Status != run.StatusPaused {
		t.Fatalf("first leg %v, %v", paused.Status, err)
	}
	cfg := opsTeam(t, d, ModeCoordinate, &ran, script(answer("other done"))).Config()
	cfg.ID = "other"
	other := mustTeam(t, cfg)
	member, err := d.GetRun(context.Background(), paused.Requirements[0].MemberRunID)
	if err != nil {
		t.Fatal(err)
	}
	memberRun, _ := member.Output()
	for name, p := range map[string]*run.Output{"another team's run": paused, "an agent's run": memberRun} {
		out, err := other.ContinueRun(context.Background(), p, agent.WithRequirements(confirmAll(paused.Requirements)))
		if err == nil || out != nil {
			t.Errorf("%s: continued: %v, %v", name, out.Status, err)
		}
	}
	if _, err := other.ContinueRunID(context.Background(), paused.RunID, agent.WithRequirements(confirmAll(paused.Requirements))); err == nil {
		t.Error("ContinueRunID continued another team's run")
	}
	for _, r := range sessionRuns(t, d, "s") {
		if r.Status != run.StatusPaused {
			t.Errorf("row %s (%s%s) is %s", r.RunID, r.AgentID, r.TeamID, r.Status)
		}
	}
	if ran != 0 {
		t.Errorf("the other team's member ran the tool %d times", ran)
	}
}

// Two members of a broadcast paused; a continue resolving one continues
// that one only: the team run pauses again on the other, whose requirement
// is the only one left, and the next continue runs neither the completed
// member nor its tool again.
func TestPause_BroadcastContinueResolvingOneMemberPausesOnTheOther(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var ran, ran2 int32
	ops2 := mustAgent(t, agent.Config{ID: "ops2", Name: "Ops2", DB: d, Tools: []tool.Tool{confirmTool(&ran2)},
		Model: script(call("deploy", map[string]any{}), answer("ops2 deployed it"))})
	tm := opsTeam(t, d, ModeBroadcast, &ran, script(call(ToolDelegateAll, map[string]any{"task": "deploy v2"}), answer("all deployed")), ops2)
	ctx := context.Background()
	paused, err := tm.Run(ctx, run.TextInput("ship"), agent.WithSessionID("s"))
	if err != nil || paused.Status != run.StatusPaused || len(paused.Requirements) != 2 {
		t.Fatalf("first leg %v, %v, %d requirements", paused.Status, err, len(paused.Requirements))
	}
	var opsReq []run.Requirement
	for _, r := range paused.Requirements {
		if r.MemberAgentID == "ops" {
			opsReq = confirmAll([]run.Requirement{r})
		}
	}
	again, err := tm.ContinueRun(ctx, paused, agent.WithRequirements(opsReq))
	if err != nil || again.Status != run.StatusPaused || len(again.Requirements) != 1 || again.Requirements[0].MemberAgentID != "ops2" {
		t.Fatalf("continue resolving ops: %v, %v, requirements %+v", again.Status, err, again.Requirements)
	}
	if ran != 1 || ran2 != 0 {
		t.Fatalf("after the first continue ops ran %d, ops2 %d", ran, ran2)
	}
	out, err := tm.ContinueRun(ctx, again, agent.WithRequirements(confirmAll(again.Requirements)))
	if err != nil || out.Status != run.StatusCompleted || ran != 1 || ran2 != 1 {
		t.Fatalf("continue resolving ops2: %v, %v, ops ran %d, ops2 %d", out.Status, err, ran, ran2)
	}
	for _, r := range rowsOf(t, d, "s") {
		if r.Status != run.StatusCompleted {
			t.Errorf("row %s (%s%s) is %s", r.RunID, r.AgentID, r.TeamID, r.Status)
		}
	}
	if n := len(rowsOf(t, d, "s")); n != 3 {
		t.Errorf("%d rows, want 3 (the team run, one run of each member)", n)
	}
}
