package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
)

func TestBuildTeamsAndWorkflows_WiresMembersAndSteps(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "s.yaml")
	if err := writeScript(script); err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{ID: "writer", Model: scripted.Reply("x")})
	if err != nil {
		t.Fatal(err)
	}
	c := Config{
		Teams: []Team{{ID: "crew", Name: "Crew", Model: "scripted:" + script, Members: []string{"writer"}}},
		Workflows: []Workflow{{ID: "flow", Steps: []WorkflowStep{
			{Name: "one", Agent: "writer"}, {Team: "crew"},
		}}},
	}
	teams, workflows, err := c.BuildTeamsAndWorkflows(nil, []*agent.Agent{a})
	if err != nil {
		t.Fatal(err)
	}
	if len(teams) != 1 || teams[0].ID() != "crew" || len(teams[0].Members()) != 1 {
		t.Errorf("teams = %+v", teams)
	}
	if len(workflows) != 1 || len(workflows[0].Steps()) != 2 || workflows[0].Steps()[1].Runner != teams[0] || workflows[0].Steps()[1].Name != "crew" {
		t.Errorf("workflows = %+v", workflows)
	}

	bad := Config{
		Teams:     []Team{{ID: "nomodel", Members: []string{"writer"}}, {ID: "ghost", Model: "scripted:" + script, Members: []string{"nobody"}}},
		Workflows: []Workflow{{ID: "w", Steps: []WorkflowStep{{Team: "missing"}}}},
	}
	_, _, err = bad.BuildTeamsAndWorkflows(nil, []*agent.Agent{a})
	for _, want := range []string{"team nomodel: model is required", `team ghost: members: no agent with id "nobody"`, `workflow w: steps[0]: no team with id "missing"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to mention %q", err, want)
		}
	}
}

func writeScript(path string) error {
	return os.WriteFile(path, []byte("turns:\n  - content: ok\n"), 0o600)
}
