package team

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// A team run's metadata is Agno's: the call's with the team's
// Config.Metadata merged over it (the team winning a conflict, nested
// objects merged), and a member run's is the team run's with the member's
// own Config.Metadata merged over it (the member winning there).
func TestRun_TeamMetadataWinsOverTheCallsAndMembersOwnWinsOverTheTeams(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			t.Parallel()
			d := openDB(t)
			m := mustAgent(t, agent.Config{ID: "m", Model: scripted.Reply("ok"), DB: d,
				Metadata: map[string]any{"env": "member", "tags": map[string]any{"owner": "m"}}})
			tm := mustTeam(t, Config{ID: "t", DB: d, Members: []*agent.Agent{m},
				Metadata: map[string]any{"env": "prod", "tags": map[string]any{"team": "ops"}},
				Model:    script(call(ToolDelegate, map[string]any{"member_id": "m", "task": "x"}), answer("done"))})
			given := map[string]any{"env": "dev", "request": "r1", "tags": map[string]any{"team": "web", "tier": "gold"}}
			opts := []agent.RunOption{agent.WithSessionID("s"), agent.WithMetadata(given)}
			if stream {
				collect(t, tm.Stream(context.Background(), run.TextInput("go"), opts...))
			} else if _, err := tm.Run(context.Background(), run.TextInput("go"), opts...); err != nil {
				t.Fatal(err)
			}
			want := map[string]map[string]any{
				"t": {"env": "prod", "request": "r1", "tags": map[string]any{"team": "ops", "tier": "gold"}},
				"m": {"env": "member", "request": "r1", "tags": map[string]any{"team": "ops", "tier": "gold", "owner": "m"}},
			}
			checkRunMetadata(t, sessionRuns(t, d, "s"), want)
			if !reflect.DeepEqual(given, map[string]any{"env": "dev", "request": "r1", "tags": map[string]any{"team": "web", "tier": "gold"}}) {
				t.Errorf("the caller's metadata changed: %v", given)
			}
			if !reflect.DeepEqual(tm.Metadata(), map[string]any{"env": "prod", "tags": map[string]any{"team": "ops"}}) {
				t.Errorf("the team's metadata changed: %v", tm.Metadata())
			}
		})
	}
}

// A continued team run keeps its paused run's metadata with the continue's
// merged over it (the team still winning), and the member run it continues
// gets the same, as the leader stamps the team run.
func TestContinueRun_MembersGetTheContinuedTeamRunsMetadata(t *testing.T) {
	t.Parallel()
	d := openDB(t)
	var ran int32
	ops := mustAgent(t, agent.Config{ID: "ops", DB: d, Tools: []tool.Tool{confirmTool(&ran)},
		Model: script(call("deploy", map[string]any{}), answer("deployed it"))})
	tm := mustTeam(t, Config{ID: "crew", DB: d, Members: []*agent.Agent{ops}, Metadata: map[string]any{"env": "prod"},
		Model: script(call(ToolDelegate, map[string]any{"member_id": "ops", "task": "deploy v2"}), answer("ops deployed v2"))})
	ctx := context.Background()
	paused, err := tm.Run(ctx, run.TextInput("ship it"), agent.WithSessionID("s"), agent.WithMetadata(map[string]any{"request": "r1"}))
	if err != nil || paused.Status != run.StatusPaused {
		t.Fatalf("%+v, %v", paused, err)
	}
	out, err := tm.ContinueRun(ctx, paused, agent.WithRequirements(confirmAll(paused.Requirements)),
		agent.WithMetadata(map[string]any{"step": "approved", "env": "dev"}))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("%+v, %v", out, err)
	}
	md := map[string]any{"env": "prod", "request": "r1", "step": "approved"}
	checkRunMetadata(t, sessionRuns(t, d, "s"), map[string]map[string]any{"crew": md, "ops": md})
}

// checkRunMetadata compares the stored runs' metadata with want's, by the
// id of the agent or team that ran them.
func checkRunMetadata(t *testing.T, rows []db.Run, want map[string]map[string]any) {
	t.Helper()
	if len(rows) != len(want) {
		t.Fatalf("%d runs stored, want %d", len(rows), len(want))
	}
	for _, r := range rows {
		out, err := r.Output()
		if err != nil {
			t.Fatal(err)
		}
		who := out.AgentID + out.TeamID
		if !reflect.DeepEqual(out.Metadata, want[who]) {
			t.Errorf("run of %s: metadata %v, want %v", who, out.Metadata, want[who])
		}
	}
}
