package main

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunAndServe_ReadTheSameFile: `run --config F` and `serve --config F`
// share one loader, so one agent (the shape of an agents: entry) and a whole
// AgentOS file both work with both commands.
func TestRunAndServe_ReadTheSameFile(t *testing.T) {
	t.Parallel()
	s := writeFile(t, "s.yaml", script)
	tests := []struct {
		name, file string
		runArgs    []string
	}{
		{"one agent", "id: calc\nmodel: scripted:" + s + "\ntools: [calculator]\n", nil},
		{"agentos file with one agent", "agents:\n  - id: calc\n    model: scripted:" + s + "\n    tools: [calculator]\n", nil},
		{"agentos file, agent picked", "agents:\n  - id: other\n    model: scripted:" + s + "\n  - id: calc\n    model: scripted:" + s + "\n    tools: [calculator]\n", []string{"--agent", "calc"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := writeFile(t, "agent.yaml", tc.file)
			args := append(append([]string{"run", "--config", f}, tc.runArgs...), "what is 6 times 7")
			code, out, errOut := cli(t, args...)
			if code != 0 || strings.TrimSpace(out) != "six times seven is 42" || !strings.Contains(errOut, "calculator(") {
				t.Fatalf("run: code %d out %q err %q", code, out, errOut)
			}
			dir := t.TempDir()
			base, stop := startServe(t, "--config", f, "--port", "0", "--db", filepath.Join(dir, "a.db"), "--data-dir", filepath.Join(dir, "d"))
			status, body := postRun(t, base, "calc", url.Values{"message": {"what is 6 times 7"}, "stream": {"false"}})
			if status != 200 || body["content"] != "six times seven is 42" {
				t.Errorf("serve: POST /agents/calc/runs = %d %v", status, body)
			}
			if code, logs := stop(); code != 0 {
				t.Errorf("serve exit %d: %s", code, logs)
			}
		})
	}
}

func TestRunAndServe_SameConfigErrors(t *testing.T) {
	t.Parallel()
	f := writeFile(t, "agent.yaml", "id: a\nmodel: scripted:x.yaml\nmodle: y\n")
	for _, cmd := range [][]string{{"run", "--config", f, "hi"}, {"serve", "--config", f, "--port", "0", "--db", filepath.Join(t.TempDir(), "a.db")}} {
		code, _, errOut := cli(t, cmd...)
		if code == 0 || !strings.Contains(errOut, `agent.yaml:3: unknown key "modle" at the top level: did you mean "model"?`) {
			t.Errorf("%s: code %d stderr %q", cmd[0], code, errOut)
		}
	}
}
