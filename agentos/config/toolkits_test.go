package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/run"
)

func TestValidate_ToolOptionsAreAppliedOrRefused(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, yaml, want string }{
		{"SQLTools enable flag", "agents:\n  - id: a\n    model: a:b\n    tools:\n      - name: sql\n        options: {dsn: x.db, enable_run_sql_query: true}\n",
			`"enable_run_sql_query" was removed in Agno 3.0: use include_tools / exclude_tools`},
		{"unknown option key", "agents:\n  - id: a\n    model: a:b\n    tools:\n      - name: shell\n        options: {allowed_commands: [ls], cwd: /tmp}\n",
			"unknown option cwd (valid options: allowed_commands, base_dir, env, exclude_tools, include_tools, max_output, timeout)"},
		{"missing required option", "agents:\n  - id: a\n    model: a:b\n    tools: [files]\n", "base_dir is required"},
		{"options on a tool without any", "agents:\n  - id: a\n    model: a:b\n    tools:\n      - name: calculator\n        options: {digits: 3}\n", "takes no options"},
		{"Agno toolkit name", "agents:\n  - id: a\n    model: a:b\n    tools: [sql_tools]\n", `the toolkit is "sql"`},
		{"unsafe shell allow-list", "agents:\n  - id: a\n    model: a:b\n    tools:\n      - name: shell\n        options: {allowed_commands: [bash]}\n", "defeats the allow-list"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(tt.yaml), "os.yaml")
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			err = cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want mention of %q", err, tt.want)
			}
		})
	}
}

func TestAgentBuild_AppliesToolOptions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg, err := Parse([]byte("model: scripted:../../examples/hello.script.yaml\ntools:\n  - name: files\n    options: {base_dir: "+dir+", include_tools: [read_file, list_files]}\n"), "agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ag, err := cfg.Agents[0].Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range ag.Tools() {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "read_file,list_files" {
		t.Errorf("tools = %v, want include_tools applied", names)
	}
}

// TestExampleToolkits_RunsEveryOfflineToolkit loads examples/toolkits.yaml
// through the real loader, opens its database as `agentry serve` does and runs
// the scripted agent, whose first turn calls every tool once.
func TestExampleToolkits_RunsEveryOfflineToolkit(t *testing.T) {
	work := t.TempDir()
	if err := os.Mkdir(filepath.Join(work, "examples"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"toolkits.yaml", "toolkits.script.yaml", "hello.script.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, "examples", f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(work)
	cfg, err := Load("examples/toolkits.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store, err := dsn.Open(ctx, cfg.DB.DSN, dsn.Drivers{SQLite: sqlite.OpenDSN}, dsn.Options{ID: cfg.DB.ID})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ag, err := cfg.Agents[0].Build(store)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ag.Run(ctx, run.TextInput("show me every toolkit"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"calculator":        "42",
		"current_time":      "Z",
		"list_files":        "toolkits.yaml",
		"read_file":         "scripted-hello",
		"search_content":    "calculator",
		"list_tables":       "agno_sessions",
		"run_sql_query":     `"columns":["sessions"]`,
		"run_shell_command": "hello.script.yaml",
	}
	seen := map[string]bool{}
	for _, te := range out.Tools {
		seen[te.ToolName] = true
		if te.ToolCallError || !strings.Contains(te.Result, want[te.ToolName]) {
			t.Errorf("%s: error %v, result %.200q; want it to contain %q", te.ToolName, te.ToolCallError, te.Result, want[te.ToolName])
		}
	}
	for name := range want {
		if !seen[name] {
			t.Errorf("%s was not called", name)
		}
	}
	if !strings.Contains(out.Content.(string), "database and the shell") {
		t.Errorf("content = %v", out.Content)
	}
}
