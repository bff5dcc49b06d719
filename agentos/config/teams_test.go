package config

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/team"
)

func TestParse_TeamModesAndNesting(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "s.yaml")
	if err := writeScript(script); err != nil {
		t.Fatal(err)
	}
	yaml := `
agents:
  - {id: writer, model: "x:y"}
  - {id: editor, model: "x:y"}
teams:
  - id: company
    model: "scripted:` + script + `"
    mode: broadcast
    members: [studio, editor]
    stream_member_events: false
    store_member_responses: false
  - id: studio
    model: "scripted:` + script + `"
    mode: tasks
    max_iterations: 3
    max_concurrent_members: 2
    store_events: true
    members: [writer]
  - id: desk
    model: "scripted:` + script + `"
    mode: route
    members: [writer]
    share_member_interactions: true
    determine_input_for_members: false
`
	cfg, err := Parse([]byte(yaml), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	w, _ := agent.New(agent.Config{ID: "writer", Model: scripted.Reply("x")})
	e, _ := agent.New(agent.Config{ID: "editor", Model: scripted.Reply("x")})
	teams, _, err := cfg.BuildTeamsAndWorkflows(nil, []*agent.Agent{w, e}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(teams) != 3 || teams[0].ID() != "company" || teams[1].ID() != "studio" {
		t.Fatalf("teams in file order: %v", teams)
	}
	company := teams[0]
	if company.Mode() != team.ModeBroadcast || len(company.Teams()) != 1 || company.Teams()[0] != teams[1] || len(company.Members()) != 1 {
		t.Errorf("company = %+v", company.Config())
	}
	if c := company.Config(); *c.StreamMemberEvents || *c.StoreMemberResponses {
		t.Errorf("member options = %v %v", *c.StreamMemberEvents, *c.StoreMemberResponses)
	}
	if c := teams[1].Config(); c.Mode != team.ModeTasks || c.MaxIterations != 3 || c.MaxConcurrentMembers != 2 || !c.StoreEvents {
		t.Errorf("studio = %+v", c)
	}
	if c := teams[2].Config(); c.Mode != team.ModeRoute || !c.ShareMemberInteractions || c.DetermineInputForMembers == nil || *c.DetermineInputForMembers {
		t.Errorf("desk = %+v", c)
	}
}

func TestValidate_RefusesBadTeamModesAndMembers(t *testing.T) {
	t.Parallel()
	chain := "teams:\n"
	for i := 1; i <= team.MaxNestingDepth+1; i++ {
		member := "a"
		if i > 1 {
			member = "l" + string(rune('0'+i-1))
		}
		chain += "  - {id: l" + string(rune('0'+i)) + ", model: \"x:y\", members: [" + member + "]}\n"
	}
	agents := "agents:\n  - {id: a, model: \"x:y\"}\n"
	tests := []struct{ name, yaml, want string }{
		{"unknown mode", agents + "teams:\n  - {id: t, model: \"x:y\", members: [a], mode: swarm}\n", `teams[0].mode: "swarm" is not a mode`},
		{"max_iterations outside tasks", agents + "teams:\n  - {id: t, model: \"x:y\", members: [a], max_iterations: 4}\n", "max_iterations: applies to mode tasks only"},
		{"negative max_concurrent_members", agents + "teams:\n  - {id: t, model: \"x:y\", members: [a], max_concurrent_members: -1}\n", "teams[0].max_concurrent_members: must be 0 (no bound) or more"},
		{"negative num_team_history_runs", agents + "teams:\n  - {id: t, model: \"x:y\", members: [a], add_team_history_to_members: true, num_team_history_runs: -1}\n", "teams[0].num_team_history_runs: must be 0 (the default, 3) or more"},
		{"determine_input_for_members false in tasks mode", agents + "teams:\n  - {id: t, model: \"x:y\", members: [a], mode: tasks, determine_input_for_members: false}\n", "teams[0].determine_input_for_members: false applies to delegations"},
		{"num_team_history_runs without team history", agents + "teams:\n  - {id: t, model: \"x:y\", members: [a], num_team_history_runs: 2}\n", "num_team_history_runs: applies with add_team_history_to_members: true only"},
		{"unknown member", agents + "teams:\n  - {id: t, model: \"x:y\", members: [ghost]}\n", `no agent or team with id "ghost"`},
		{"ambiguous member", agents + "teams:\n  - {id: a, model: \"x:y\", members: [a]}\n  - {id: t, model: \"x:y\", members: [a]}\n", `"a" names both an agent and a team`},
		{"cycle", agents + "teams:\n  - {id: p, model: \"x:y\", members: [q]}\n  - {id: q, model: \"x:y\", members: [p]}\n", `team "p" contains itself: p → q → p`},
		{"too deep", agents + chain, "teams nest 5 levels deep; the limit is 4"},
	}
	for _, tc := range tests {
		cfg, err := Parse([]byte(tc.yaml), "os.yaml")
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

// add_team_history_to_members reaches the team with Agno's default of three
// runs; without a database to read the history from, building the team
// says so.
func TestBuildTeams_TeamHistoryToMembers(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "s.yaml")
	if err := writeScript(script); err != nil {
		t.Fatal(err)
	}
	yaml := "agents:\n  - {id: a, model: \"x:y\"}\nteams:\n  - {id: t, model: \"scripted:" + script + "\", members: [a], add_team_history_to_members: true}\n"
	cfg, err := Parse([]byte(yaml), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	a, _ := agent.New(agent.Config{ID: "a", Model: scripted.Reply("x")})
	teams, _, err := cfg.BuildTeamsAndWorkflows(testdbs.SQLite(t), []*agent.Agent{a}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := teams[0].Config(); !c.AddTeamHistoryToMembers || c.NumTeamHistoryRuns != 3 {
		t.Errorf("team history = %v, %d runs", c.AddTeamHistoryToMembers, c.NumTeamHistoryRuns)
	}
	if _, _, err := cfg.BuildTeamsAndWorkflows(nil, []*agent.Agent{a}, BuildOptions{}); err == nil || !strings.Contains(err.Error(), "AddTeamHistoryToMembers needs Config.DB") {
		t.Errorf("without a database: %v", err)
	}
}
