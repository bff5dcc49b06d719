package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/offload"
)

func TestParse_OffloadToolResultsIsABoolOrAMapping(t *testing.T) {
	t.Parallel()
	agentYAML := func(v string) string {
		return "agents:\n  - id: a\n    model: a:b\n    tools: [calculator]\n    offload_tool_results: " + v + "\n"
	}
	tests := []struct {
		name, yaml string
		want       *offload.Config
	}{
		{"true", "true", &offload.Config{}},
		{"false", "false", nil},
		{"mapping", "{threshold_chars: 20000, preview_lines: 10, preview_chars: 800, ttl: 24h}",
			&offload.Config{ThresholdChars: 20000, PreviewLines: 10, PreviewChars: 800, TTL: offload.Duration(24 * time.Hour)}},
		{"mapping switched off", "{enabled: false, threshold_chars: 20000}", nil},
	}
	for _, tt := range tests {
		cfg, err := Parse([]byte(agentYAML(tt.yaml)), "os.yaml")
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := cfg.OffloadFor(cfg.Agents[0], false)
		if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
			t.Fatalf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
	for _, bad := range []struct{ yaml, want string }{
		{"maybe", "offload_tool_results must be true, false or a map"},
		{"{treshold_chars: 5}", `unknown key "treshold_chars"`},
		{"{ttl: soon}", `ttl "soon" is not a duration`},
		{"{threshold_chars: -1}", "must not be negative"},
		{"{threshold_chars: 100, preview_chars: 200}", "preview_chars (200) must be below threshold_chars"},
	} {
		_, err := Parse([]byte(agentYAML(bad.yaml)), "os.yaml")
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: err = %v, want %q", bad.yaml, err, bad.want)
		}
	}
}

func TestOffloadFor_AgentWinsThenFileThenServerDefault(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("offload_tool_results: {threshold_chars: 30000}\nagents:\n  - id: a\n    model: a:b\n    tools: [calculator]\n  - id: b\n    model: a:b\n    tools: [calculator]\n    offload_tool_results: false\n"), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.OffloadFor(cfg.Agents[0], true); got == nil || got.ThresholdChars != 30000 {
		t.Fatalf("file default: %+v", got)
	}
	if got := cfg.OffloadFor(cfg.Agents[1], true); got != nil {
		t.Fatalf("agent off: %+v", got)
	}
	empty := Config{}
	if got := empty.OffloadFor(Agent{Tools: []Tool{{Name: "calculator"}}}, true); got == nil || *got != (offload.Config{}) {
		t.Fatalf("server default: %+v", got)
	}
	if got := empty.OffloadFor(Agent{Tools: []Tool{{Name: "calculator"}}}, false); got != nil {
		t.Fatalf("library default must be off: %+v", got)
	}
	if got := empty.OffloadFor(Agent{}, true); got != nil {
		t.Fatalf("an agent without tools has nothing to offload: %+v", got)
	}
}

func TestBuild_OffloadGivesTheReadTools(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "s.yaml")
	if err := writeScript(script); err != nil {
		t.Fatal(err)
	}
	decl := Agent{ID: "a", Model: Model{Spec: "scripted:" + script}, Tools: []Tool{{Name: "calculator"}}, OffloadToolResults: &offload.Setting{Set: true, Enabled: true}}
	a, err := decl.Build(db.New("m", memory.New()))
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(a.Tools()); got != "calculator read_result search_result" {
		t.Fatalf("tools = %s", got)
	}
	if _, err := decl.Build(nil); err == nil || !strings.Contains(err.Error(), "needs Config.DB") {
		t.Fatalf("offloading without a database: %v", err)
	}
}

func TestBuild_CodeModeReadsOffloadedResultsWhenOffloadIsOn(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "s.yaml")
	if err := writeScript(script); err != nil {
		t.Fatal(err)
	}
	for _, on := range []bool{false, true} {
		decl := Agent{ID: "a", Model: Model{Spec: "scripted:" + script}, Tools: []Tool{{Name: "calculator"}}, CodeMode: &CodeMode{Enabled: true},
			OffloadToolResults: &offload.Setting{Set: true, Enabled: on}}
		a, err := decl.Build(db.New("m", memory.New()))
		if err != nil {
			t.Fatal(err)
		}
		var desc string
		for _, s := range a.Tools() {
			if s.Name == "execute" {
				desc = s.Description
			}
		}
		if got := strings.Contains(desc, "results.get(id)"); got != on {
			t.Fatalf("offload %v: execute mentions results: %v", on, got)
		}
	}
}
