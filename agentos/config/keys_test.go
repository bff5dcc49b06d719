package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goTypeWords are what yaml.v3 says about Go types; a user writes YAML and
// cannot act on them.
var goTypeWords = regexp.MustCompile(`config\.|in type|into |!!str|!!int|!!map|!!seq|time\.Duration|\bint64\b|\bstruct\b`)

func TestParse_ErrorsNameYAMLKeysAndSuggestTheNearest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"misspelt top-level key", "agnets:\n  - id: a\n", []string{"os.yaml:1", `unknown key "agnets"`, `did you mean "agents"?`}},
		{"swapped letters", "server:\n  prot: 1\n", []string{"os.yaml:2", `"prot" in server`, `did you mean "port"?`}},
		{"agent key", "agents:\n  - id: a\n    model: x:y\n    instructons: be brief\n", []string{"os.yaml:4", "in agents[0]", `did you mean "instructions"?`}},
		{"jwt key", "auth:\n  jwt:\n    verification_key: x\n", []string{"os.yaml:3", "in auth.jwt", `did you mean "verification_keys"?`}},
		{"workflow step key", "workflows:\n  - id: w\n    steps:\n      - agnt: a\n", []string{"os.yaml:4", "in workflows[0].steps[0]", `did you mean "agent"?`}},
		{"nothing near: list the valid keys", "server:\n  colour: blue\n", []string{"os.yaml:2", `unknown key "colour" in server`, "valid keys: host, port, cors_origins"}},
		{"number expected", "server:\n  port: eighty\n", []string{"os.yaml:2", `server.port: "eighty" is not a whole number`}},
		{"boolean expected", "agents:\n  - id: a\n    model: x:y\n    markdown: maybe\n", []string{"os.yaml:4", `agents[0].markdown: "maybe" is not true or false`}},
		{"duration expected", "server:\n  idle_timeout: soon\n", []string{"os.yaml:2", `server.idle_timeout: "soon" is not a duration`, "10s"}},
		{"list expected", "agents:\n  - id: a\n    model: x:y\n    tools: calculator\n", []string{"os.yaml:4", "agents[0].tools: expected a list"}},
		{"mapping expected", "server: 7777\n", []string{"os.yaml:1", "server: expected a mapping", "port"}},
		{"string expected", "db:\n  dsn: [a, b]\n", []string{"os.yaml:2", "db.dsn: a list is not a string"}},
		{"every error, not the first", "server:\n  prot: 1\ndb:\n  dns: x\n", []string{"os.yaml:2", "os.yaml:4", `did you mean "dsn"?`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.yaml), "os.yaml")
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if m := goTypeWords.FindString(err.Error()); m != "" {
				t.Errorf("error %q speaks Go (%q), not YAML", err, m)
			}
		})
	}
}

func TestNearest_SuggestsOnlyPlausibleTypos(t *testing.T) {
	t.Parallel()
	keys := []string{"id", "name", "model", "instructions", "tools", "markdown"}
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"modle", "model", true},
		{"Model", "model", true},
		{"tool", "tools", true},
		{"instruction", "instructions", true},
		{"nmae", "name", true},
		{"temperature", "", false},
		{"x", "", false},
	}
	for _, tt := range tests {
		got, ok := nearest(tt.in, keys)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("nearest(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParse_OneAgentFileIsAConfigServingThatAgent(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("id: calc\nmodel: scripted:s.yaml\ntools: [calculator]\ninstructions: Be brief.\n"), "agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Agents) != 1 || cfg.Agents[0].ID != "calc" || cfg.Agents[0].Tools[0].Name != "calculator" || cfg.Server.Port != DefaultPort {
		t.Fatalf("config = %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	noID, err := Parse([]byte("model: scripted:s.yaml\n"), "agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := noID.Validate(); err == nil || !strings.Contains(err.Error(), "id is required to serve an agent") || strings.Contains(err.Error(), "agents[0]") {
		t.Errorf("serving an agent file without id: %v", err)
	}
}

func TestLoadAgent_ReadsEitherShapeWithServesLoader(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	one := write("one.yaml", "model: scripted:s.yaml\n")
	whole := write("os.yaml", "agents:\n  - id: a\n    model: scripted:s.yaml\n  - id: b\n    model: openai:gpt-4o-mini\n")
	typo := write("typo.yaml", "model: scripted:s.yaml\nmodle: x\n")

	a, err := LoadAgent(one, "")
	if err != nil || a.Model.Spec != "scripted:"+filepath.Join(dir, "s.yaml") {
		t.Errorf("one-agent file: %+v, %v (want its script path relative to the file)", a, err)
	}
	if a, err := LoadAgent(whole, "b"); err != nil || a.ID != "b" {
		t.Errorf("--agent b: %+v, %v", a, err)
	}
	for _, tc := range []struct {
		path, id, want string
	}{
		{whole, "", "declares 2 agents (a, b): pick one with --agent ID"},
		{whole, "c", `no agent with id "c" (agents: a, b)`},
		{typo, "", `did you mean "model"?`},
	} {
		if _, err := LoadAgent(tc.path, tc.id); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadAgent(%s, %q) = %v, want %q", filepath.Base(tc.path), tc.id, err, tc.want)
		}
	}
}

func TestLoad_ScriptedModelPathsAreRelativeToTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "os.yaml")
	yml := "agents:\n  - id: a\n    model: scripted:a.yaml\n    reasoning_model: scripted:/abs/r.yaml\n  - id: b\n    model: openai:gpt-4o-mini\nteams:\n  - id: t\n    model: scripted:sub/leader.yaml\n    members: [a]\n"
	if err := os.WriteFile(p, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(p, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"scripted:" + filepath.Join(dir, "a.yaml"), "scripted:/abs/r.yaml", "openai:gpt-4o-mini", "scripted:" + filepath.Join(dir, "sub", "leader.yaml")}
	got := []string{cfg.Agents[0].Model.Spec, cfg.Agents[0].ReasoningModel, cfg.Agents[1].Model.Spec, cfg.Teams[0].Model}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("model %d = %q, want %q", i, got[i], want[i])
		}
	}
}

// FuzzParse_Shapes: no input panics the loader, and an accepted file validates
// without panicking (either shape).
func FuzzParse_Shapes(f *testing.F) {
	for _, s := range []string{
		"", "server:\n  prot: 1\n", "model: scripted:s.yaml\nmodle: x\n", "agents:\n  - id: a\n    model: x:y\n    tools: [calculator]\n",
		"a: &x {b: 1}\nc: *x\n", "server:\n  <<: {port: 1}\n", "- 1\n- 2\n", "auth:\n  jwt:\n    verification_keys: [{kid: a, key: b}]\n",
		"agents: [{id: a, model: 'x:y', metadata: {k: [1, {v: 2}]}}]\nteams: [{id: t, members: [a]}]\n", "server: {body_limit: 1GiB, idle_timeout: 1s}\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := Parse([]byte(s), "fuzz.yaml")
		if err == nil {
			_ = cfg.Validate()
		}
	})
}

// offload_tool_results, media_storage and knowledge are keys of an agent and
// of the whole file: one of them in a one-agent file made it read as a whole
// configuration, and the agent's own keys were refused as unknown at the top
// level ("unknown key "model" at the top level").
func TestParse_OneAgentFileWithKeysSharedWithTheWholeFile(t *testing.T) {
	t.Parallel()
	for _, shared := range []string{"offload_tool_results: false", "media_storage: {type: none}", "knowledge: true"} {
		yml := "id: calc\nmodel: scripted:s.yaml\n" + shared + "\n"
		cfg, err := Parse([]byte(yml), "agent.yaml")
		if err != nil {
			t.Errorf("%s: %v", shared, err)
			continue
		}
		if len(cfg.Agents) != 1 || cfg.Agents[0].ID != "calc" {
			t.Errorf("%s: agents %+v", shared, cfg.Agents)
		}
	}
	// A shared key alone, or beside a top-level key, is the whole file's.
	for _, yml := range []string{"knowledge: {max_bytes: 10}\n", "offload_tool_results: false\nagents: [{id: a, model: 'scripted:s.yaml'}]\n"} {
		cfg, err := Parse([]byte(yml), "os.yaml")
		if err != nil || cfg.agentFile {
			t.Errorf("%q: read as one agent (%v), %v", yml, cfg.agentFile, err)
		}
	}
}
