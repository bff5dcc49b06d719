package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model/modeltest"
)

// goSpeak matches what a CLI user cannot act on: Go config fields, Go type
// names, Go package prefixes.
var goSpeak = regexp.MustCompile(`Config\.|in type|config\.[A-Z]|!!str|modelspec:|provider server error`)

// TestCLIErrors_SpeakCLI: errors name the flag, the environment variable, the
// YAML key or the path the user typed, not Go types (not parallel: it clears
// the providers' API key variables).
func TestCLIErrors_SpeakCLI(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	// bound and never listening while the test runs: a port merely
	// closed was once taken by another test's server, which answered 401
	refused := modeltest.RefusedAddr(t)
	t.Setenv("OPENAI_BASE_URL", "http://"+refused+"/v1")
	dir := t.TempDir()
	s := writeFile(t, "s.yaml", script)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"openai without a key", []string{"run", "--model", "openai:gpt-4o-mini", "hi"},
			[]string{"--model openai:gpt-4o-mini needs an API key", "set OPENAI_API_KEY"}},
		{"anthropic without a key", []string{"run", "--model", "anthropic:claude-sonnet-4-5", "hi"},
			[]string{"--model anthropic:claude-sonnet-4-5 needs an API key", "set ANTHROPIC_API_KEY"}},
		{"agent file without a key", []string{"run", "--config", writeFile(t, "a.yaml", "model: openai:gpt-4o-mini\n"), "hi"},
			[]string{"model openai:gpt-4o-mini needs an API key", "set OPENAI_API_KEY"}},
		{"served agent without a key", []string{"serve", "--config", writeFile(t, "os.yaml", "agents:\n  - id: a\n    model: openai:gpt-4o-mini\n"), "--port", "0", "--db", dir + "/os.db", "--data-dir", dir + "/d"},
			[]string{"agent a: model openai:gpt-4o-mini needs an API key", "set OPENAI_API_KEY"}},
		{"nothing listening", []string{"run", "--model", "openai-compatible:m", "hi"},
			[]string{"connection to " + refused + " refused"}},
		{"bad model spec", []string{"run", "--model", "gpt4", "hi"},
			[]string{"--model gpt4:", "provider:model"}},
		{"unknown tool", []string{"run", "--model", "scripted:" + s, "--tool", "web_serch", "hi"},
			[]string{"--tool web_serch: unknown tool", "calculator"}},
		{"--db is a directory (run)", []string{"run", "--model", "scripted:" + s, "--db", dir, "hi"},
			[]string{dir + " is a directory"}},
		{"--db is a directory (runs list)", []string{"runs", "list", "--db", dir, "--limit", "1"},
			[]string{dir + " is a directory"}},
		{"misspelt config key", []string{"run", "--config", writeFile(t, "b.yaml", "model: scripted:"+s+"\ninstructons: be brief\n"), "hi"},
			[]string{`b.yaml:2: unknown key "instructons"`, `did you mean "instructions"?`}},
		{"wrong kind of value", []string{"serve", "--config", writeFile(t, "c.yaml", "server:\n  port: eighty\n")},
			[]string{`c.yaml:2: server.port: "eighty" is not a whole number`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := cli(t, tc.args...)
			if code == 0 {
				t.Fatalf("exit 0, stderr %q", errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q does not mention %q", errOut, w)
				}
			}
			if m := goSpeak.FindString(errOut); m != "" {
				t.Errorf("stderr %q speaks Go (%q)", errOut, m)
			}
		})
	}
}
