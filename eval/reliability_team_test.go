package eval_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/eval"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/team"
)

// delegating is a team whose leader hands one task to its member memberID,
// then answers "done".
func delegating(t *testing.T, id, memberID string, members []*agent.Agent, teams []*team.Team) *team.Team {
	t.Helper()
	tm, err := team.New(team.Config{ID: id, Name: id, Members: members, Teams: teams, Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
		{ToolCalls: []scripted.ToolCall{{Name: team.ToolDelegate, Args: map[string]any{"member_id": memberID, "task": "what is 6 times 7?"}}}},
		{Content: "done"}}})})
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// A team's tool calls are its members' too, at every depth, as Agno's
// reliability eval reads them: a team whose member multiplied passes an
// eval expecting multiply (it failed with multiply missing, since only the
// leader's delegation calls were read).
func TestReliability_ATeamsMembersCallsCount(t *testing.T) {
	t.Parallel()
	crew := delegating(t, "crew", "calc", []*agent.Agent{calculator(t, nil)}, nil)
	outer := delegating(t, "outer", "crew", nil, []*team.Team{delegating(t, "crew", "calc", []*agent.Agent{calculator(t, nil)}, nil)})
	for name, target := range map[string]*team.Team{"team": crew, "team of a team": outer} {
		r := &eval.Reliability{Target: target, Input: "what is 6 times 7?", ExpectedToolCalls: []string{"multiply"}, AllowAdditionalToolCalls: true,
			ExpectedToolCallArguments: map[string]eval.ArgumentSpecs{"multiply": {{"a": 6, "b": 7}}}}
		res, err := r.Run(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !res.Passed || len(res.PassedToolCalls) != 1 || res.PassedToolCalls[0] != "multiply" || len(res.PassedArgumentChecks) != 1 {
			t.Errorf("%s: %+v, want multiply passed with its arguments", name, res)
		}
		if res.Row.TeamID != target.Component().ID {
			t.Errorf("%s: row team_id %q", name, res.Row.TeamID)
		}
	}
	// Strict, the leader's delegation is an unexpected call, as in Agno.
	res, err := (&eval.Reliability{Target: crew, Input: "x", ExpectedToolCalls: []string{"multiply"}}).Run(context.Background())
	if err != nil || res.Passed || len(res.FailedToolCalls) != 1 || res.FailedToolCalls[0] != team.ToolDelegate || len(res.MissingToolCalls) != 0 {
		t.Errorf("strict: %+v, %v; want only the delegation failed", res, err)
	}
}
