package team

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

var teamSink *Team

func benchMembers(b *testing.B) []*agent.Agent {
	var ms []*agent.Agent
	for _, id := range []string{"researcher", "writer", "editor"} {
		ms = append(ms, mustAgent(b, agent.Config{ID: id, Name: id, Description: "The team's " + id + ".", Model: scripted.Reply("done by " + id)}))
	}
	return ms
}

// BenchmarkTeamConstruction is Agno's team instantiation: a team over three
// member agents (built once; Agno's benchmark also reuses its agents).
func BenchmarkTeamConstruction(b *testing.B) {
	members := benchMembers(b)
	m := scripted.Reply("ok")
	b.ReportAllocs()
	for b.Loop() {
		tm, err := New(Config{Name: "Bench Team", Model: m, Members: members})
		if err != nil {
			b.Fatal(err)
		}
		teamSink = tm
	}
}

// BenchmarkTeamRunCoordinate3Members: the leader delegates to three members
// in one turn (their runs execute concurrently), then answers; no storage.
func BenchmarkTeamRunCoordinate3Members(b *testing.B) {
	var calls []scripted.ToolCall
	for _, id := range []string{"researcher", "writer", "editor"} {
		calls = append(calls, scripted.ToolCall{Name: ToolDelegate, Args: map[string]any{"member_id": id, "task": "do your part"}})
	}
	tm := mustTeam(b, Config{Name: "Bench Team", Members: benchMembers(b),
		Model: script(scripted.Turn{ToolCalls: calls}, answer("all three are done"))})
	ctx := context.Background()
	in := run.TextInput("write an article")
	b.ReportAllocs()
	for b.Loop() {
		out, err := tm.Run(ctx, in)
		if err != nil || len(out.MemberResponses) != 3 {
			b.Fatal(out, err)
		}
	}
}
