package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestServe_TeamsAndWorkflowsFailClearlyUntilServed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := writeFile(t, "teams.yaml", `agents:
  - id: a
    model: scripted:x
teams:
  - id: t
    members: [a]
workflows:
  - id: w
    steps:
      - agent: a
`)
	code, _, errOut := cli(t, "serve", "--config", cfg, "--port", "0", "--db", filepath.Join(dir, "a.db"), "--data-dir", filepath.Join(dir, "d"))
	if code == 0 || !strings.Contains(errOut, "1 team(s) and 1 workflow(s)") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}
