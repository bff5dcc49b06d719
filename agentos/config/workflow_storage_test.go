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
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// A workflow (and a team) in YAML takes offload_tool_results and its own
// media_storage; the workflow run stores its input media there.
func TestBuildTeamsAndWorkflows_WorkflowOffloadAndOwnMediaStorage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := filepath.Join(dir, "s.yaml")
	if err := writeScript(script); err != nil {
		t.Fatal(err)
	}
	wfMedia, teamMedia := filepath.Join(dir, "wf-media"), filepath.Join(dir, "team-media")
	yml := "agents:\n  - id: writer\n    model: scripted:" + script + "\n" +
		"teams:\n  - id: crew\n    model: scripted:" + script + "\n    members: [writer]\n    media_storage: {type: local, dir: " + teamMedia + "}\n" +
		"workflows:\n  - id: flow\n    steps: [{agent: writer}]\n    offload_tool_results: {threshold_chars: 20000}\n" +
		"    media_storage: {type: local, dir: " + wfMedia + "}\n"
	c, err := Parse([]byte(yml), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	d := testdbs.SQLite(t)
	a, err := agent.New(agent.Config{ID: "writer", Model: scripted.Reply("x"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.BuildTeamsAndWorkflows(d, []*agent.Agent{a}, BuildOptions{}); err == nil || !strings.Contains(err.Error(), "OpenMedia") {
		t.Fatalf("a component media_storage without OpenMedia: %v", err)
	}
	open := func(m *MediaStorage) (media.Storage, error) { return m.Open(context.Background(), dir) }
	teams, wfs, err := c.BuildTeamsAndWorkflows(d, []*agent.Agent{a}, BuildOptions{OpenMedia: open})
	if err != nil {
		t.Fatal(err)
	}
	if teams[0].Config().MediaStorage == nil {
		t.Fatal("the team has no media storage")
	}
	wc := wfs[0].Config()
	if wc.OffloadToolResults == nil || wc.OffloadToolResults.ThresholdChars != 20000 || wc.MediaStorage == nil {
		t.Fatalf("workflow config = %+v", wc)
	}
	img := append([]byte{0xff, 0xd8, 0xff, 0xe0}, bytes.Repeat([]byte{9}, 50<<10)...)
	in := run.Input{InputContent: "go", Images: []run.Media{{Content: img, MIMEType: "image/jpeg"}}}
	if _, err := wfs[0].Run(context.Background(), in, agent.WithSessionID("s"), agent.WithRunID("flow-run")); err != nil {
		t.Fatal(err)
	}
	row, err := d.GetRun(context.Background(), "flow-run")
	if err != nil {
		t.Fatal(err)
	}
	if len(row.RunData) > 10_000 || !strings.Contains(string(row.RunData), `"media_reference"`) {
		t.Fatalf("stored workflow run: %d bytes", len(row.RunData))
	}
	entries, err := os.ReadDir(filepath.Join(wfMedia, "owners"))
	if err != nil || len(entries) != 1 {
		t.Fatalf("the workflow's media_storage holds %d owner dirs (%v)", len(entries), err)
	}
}
