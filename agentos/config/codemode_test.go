package config

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

func toolNames(specs []model.ToolSpec) string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func TestParse_CodeModeIsABoolOrAMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml string
		want       CodeMode
	}{
		{"true", "code_mode: true", CodeMode{Enabled: true}},
		{"false", "code_mode: false", CodeMode{}},
		{"mapping is enabled", "code_mode:\n      persist: true\n      busy: refuse\n      cpu_time_limit: 2s\n      memory_limit: 32MiB\n      tools: [calculator]",
			CodeMode{Enabled: true, Persist: true, Busy: "refuse", CPUTimeLimit: 2 * time.Second, MemoryLimit: 32 << 20, Tools: []Tool{{Name: "calculator"}}}},
		{"mapping switched off", "code_mode:\n      enabled: false\n      persist: true", CodeMode{Persist: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte("agents:\n  - id: a\n    model: a:b\n    "+tt.yaml+"\n"), "os.yaml")
			if err != nil {
				t.Fatal(err)
			}
			got := *cfg.Agents[0].CodeMode
			if got.Enabled != tt.want.Enabled || got.Persist != tt.want.Persist || got.Busy != tt.want.Busy ||
				got.CPUTimeLimit != tt.want.CPUTimeLimit || got.MemoryLimit != tt.want.MemoryLimit || len(got.Tools) != len(tt.want.Tools) {
				t.Fatalf("code_mode = %+v, want %+v", got, tt.want)
			}
		})
	}
	for _, bad := range []struct{ yaml, want string }{
		{"code_mode: yes please", "code_mode is true, false or a mapping"},
		{"code_mode:\n      persit: true", "field persit not found in code_mode"},
		{"code_mode: [1]", "code_mode is true, false or a mapping"},
	} {
		_, err := Parse([]byte("agents:\n  - id: a\n    model: a:b\n    "+bad.yaml+"\n"), "os.yaml")
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: err = %v, want %q", bad.yaml, err, bad.want)
		}
	}
}

func TestValidate_RejectsBadCodeMode(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ yaml, want string }{
		{"code_mode: {busy: later}", `code_mode.busy "later"`},
		{"code_mode: {tools: [nope]}", `code_mode.tools: unknown tool "nope"`},
		{"code_mode: {max_kernels: -1}", "code_mode.max_kernels must not be negative"},
	} {
		cfg, err := Parse([]byte("agents:\n  - id: a\n    model: a:b\n    "+tt.yaml+"\n"), "os.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate() = %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

func TestBuild_CodeModeGivesTheModelExecute(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "s.yaml")
	if err := writeScript(script); err != nil {
		t.Fatal(err)
	}
	no := false
	tests := []struct {
		name  string
		agent Agent
		want  string
	}{
		{"agent tools move into code", Agent{Tools: []Tool{{Name: "calculator"}}, CodeMode: &CodeMode{Enabled: true}}, "execute restart"},
		{"code tools named apart", Agent{Tools: []Tool{{Name: "current_time"}}, CodeMode: &CodeMode{Enabled: true, Tools: []Tool{{Name: "calculator"}}}}, "current_time execute restart"},
		{"without restart", Agent{CodeMode: &CodeMode{Enabled: true, AllowRestart: &no}}, "execute"},
		{"switched off", Agent{Tools: []Tool{{Name: "calculator"}}, CodeMode: &CodeMode{}}, "calculator"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			decl := tt.agent
			decl.ID, decl.Model = "a", Model{Spec: "scripted:" + script}
			a, err := decl.Build(nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := toolNames(a.Tools()); got != tt.want {
				t.Fatalf("tools = %s, want %s", got, tt.want)
			}
		})
	}
	// Persist needs a database.
	decl := Agent{ID: "a", Model: Model{Spec: "scripted:" + script}, CodeMode: &CodeMode{Enabled: true, Persist: true}}
	if _, err := decl.Build(nil); err == nil || !strings.Contains(err.Error(), "code_mode.persist needs a database") {
		t.Fatalf("persist without a database: %v", err)
	}
	if _, err := decl.Build(db.New("", memory.New())); err != nil {
		t.Fatalf("persist with a database: %v", err)
	}
	bad := Agent{ID: "a", Model: Model{Spec: "scripted:" + script}, CodeMode: &CodeMode{Enabled: true, MemoryLimit: 10}}
	if _, err := bad.Build(nil); err == nil || !strings.Contains(err.Error(), "agent a: code_mode: codemode: MemoryLimit must be at least 1 MiB") {
		t.Fatalf("bad memory limit: %v", err)
	}
}

func TestBuild_TeamCodeModeCallsItsToolsFromCode(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "s.yaml")
	if err := writeScriptText(script, `turns:
  - tool_calls:
      - name: execute
        args: {code: "const r = await calculator({op: 'add', a: 2, b: 40}); r"}
  - content: done
`); err != nil {
		t.Fatal(err)
	}
	member, err := agent.New(agent.Config{ID: "m", Model: mustScripted(t)})
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Teams: []Team{{ID: "crew", Model: "scripted:" + script, Members: []string{"m"},
		CodeMode: &CodeMode{Enabled: true, Tools: []Tool{{Name: "calculator"}}}}}}
	teams, _, err := c.BuildTeamsAndWorkflows(nil, []*agent.Agent{member}, BuildOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := teams[0].Run(context.Background(), run.TextInput("add"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Tools) != 2 || out.Tools[0].ToolName != "calculator" || out.Tools[1].ToolName != "execute" ||
		!strings.Contains(out.Tools[1].Result, `"status":"ok"`) {
		t.Fatalf("team tools = %+v", out.Tools)
	}
}

func writeScriptText(path, text string) error { return os.WriteFile(path, []byte(text), 0o600) }

func mustScripted(t *testing.T) model.Model {
	t.Helper()
	return scripted.Reply("ok")
}
