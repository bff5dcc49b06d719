package config

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
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
	teams, workflows, err := c.BuildTeamsAndWorkflows(nil, []*agent.Agent{a}, BuildOptions{})
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
	_, _, err = bad.BuildTeamsAndWorkflows(nil, []*agent.Agent{a}, BuildOptions{})
	for _, want := range []string{"team nomodel: model is required", `team ghost: members: no agent or team with id "nobody"`, `workflow w: steps[0]: no team with id "missing"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to mention %q", err, want)
		}
	}
}

func writeScript(path string) error {
	return os.WriteFile(path, []byte("turns:\n  - content: ok\n"), 0o600)
}

// A team built from the file stores its leader's media in the server's
// media storage: the stored team run keeps a reference, not the bytes.
func TestBuildTeamsAndWorkflows_TeamMediaGoToTheServersStorage(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "s.yaml")
	if err := writeScript(script); err != nil {
		t.Fatal(err)
	}
	d := testdbs.SQLite(t)
	store, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{ID: "writer", Model: scripted.Reply("x"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Teams: []Team{{ID: "crew", Model: "scripted:" + script, Members: []string{"writer"}}}}
	teams, _, err := c.BuildTeamsAndWorkflows(d, []*agent.Agent{a}, BuildOptions{MediaStorage: store})
	if err != nil {
		t.Fatal(err)
	}
	img := append([]byte{0xff, 0xd8, 0xff, 0xe0}, bytes.Repeat([]byte{7}, 100<<10)...)
	in := run.Input{InputContent: "look", Images: []run.Media{{Content: img, MIMEType: "image/jpeg", Name: "x.jpg"}}}
	if _, err := teams[0].Run(context.Background(), in, agent.WithSessionID("s"), agent.WithRunID("crew-media-run")); err != nil {
		t.Fatal(err)
	}
	row, err := d.GetRun(context.Background(), "crew-media-run")
	if err != nil {
		t.Fatal(err)
	}
	if len(row.RunData) > 10_000 || !strings.Contains(string(row.RunData), `"media_reference"`) {
		t.Fatalf("stored team run: %d bytes, reference %v", len(row.RunData), strings.Contains(string(row.RunData), `"media_reference"`))
	}
}
