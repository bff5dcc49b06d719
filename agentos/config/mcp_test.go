package config

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParse_MCPServerForms(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("mcp_server: true\n"), "os.yaml")
	if err != nil || !cfg.MCPServer.Enabled || cfg.MCPServer.Path != DefaultMCPPath {
		t.Fatalf("true: %+v, %v", cfg.MCPServer, err)
	}
	cfg, err = Parse([]byte("mcp_server: false\n"), "os.yaml")
	if err != nil || cfg.MCPServer.Enabled {
		t.Fatalf("false: %+v, %v", cfg.MCPServer, err)
	}
	cfg, err = Parse([]byte(`mcp_server:
  stateless: true
  enable_builtin_tools: true
  include_tags: [core]
  exclude_tags: [session]
  result_mode: full
  max_result_bytes: 1KiB
  tools: [calculator]
`), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.MCPServer
	if !m.Enabled || !m.Stateless || m.ResultMode != "full" || m.MaxResultBytes != 1024 || len(m.Tools) != 1 ||
		m.IncludeTags[0] != "core" || m.ExcludeTags[0] != "session" || m.Path != DefaultMCPPath {
		t.Fatalf("mapping: %+v", m)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	opts, err := m.Options()
	if err != nil || len(opts.Tools) != 1 || !opts.Stateless {
		t.Fatalf("options %+v, %v", opts, err)
	}
	cfg, err = Parse([]byte("mcp_server:\n  include_tags: []\n"), "os.yaml")
	if err != nil || cfg.MCPServer.IncludeTags == nil || !cfg.MCPServer.Enabled {
		t.Fatalf("empty include_tags must stay an empty list (no built-in tools): %+v, %v", cfg.MCPServer, err)
	}
	cfg, err = Parse([]byte("mcp_server:\n  enabled: false\n  stateless: true\n"), "os.yaml")
	if err != nil || cfg.MCPServer.Enabled {
		t.Fatalf("enabled false: %+v, %v", cfg.MCPServer, err)
	}
}

func TestMCPServer_BadValuesAreRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ yaml, want string }{
		{"mcp_server: yes please\n", "true, false or a mapping"},
		{"mcp_server:\n  include_tag: [core]\n", "include_tag not found in mcp_server"},
		{"mcp_server:\n  include_tags: [memory]\n", `unknown tag "memory"`},
		{"mcp_server:\n  exclude_tags: [x]\n", `unknown tag "x"`},
		{"mcp_server:\n  result_mode: compact\n", `result_mode "compact"`},
		{"mcp_server:\n  path: mcp\n", "must start with /"},
	} {
		cfg, err := Parse([]byte(tt.yaml), "os.yaml")
		if err == nil {
			err = cfg.Validate()
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want it to mention %q", tt.yaml, err, tt.want)
		}
	}
	cfg, err := Parse([]byte("mcp_server:\n  tools: [no_such_tool]\n"), "os.yaml")
	if err == nil {
		_, err = cfg.MCPServer.Options()
	}
	if err == nil || !strings.Contains(err.Error(), "no_such_tool") {
		t.Errorf("unknown tool: %v", err)
	}
}

// scriptedModel writes a script and returns its model spec.
func scriptedModel(t *testing.T) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "s.yaml")
	if err := writeScript(script); err != nil {
		t.Fatal(err)
	}
	return "scripted:" + script
}

func TestAgentMCP_BuildsOneToolkitPerServer(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`agents:
  - id: a
    model: `+scriptedModel(t)+`
    mcp:
      - command: ./docs-server
        args: [--stdio]
        env: {DOCS_TOKEN: x, reasoning: y}
        include_tools: [search]
      - url: https://mcp.example.com/mcp
        headers: {X-Team: blue}
        bearer_token: t0k
        tool_name_prefix: web_
        timeout: 5s
        max_output_bytes: 16KiB
`), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Agents[0].MCP
	if len(m) != 2 || m[0].Command != "./docs-server" || m[0].Env["reasoning"] != "y" || m[1].MaxOutputBytes != 16<<10 || m[1].ToolNamePrefix != "web_" {
		t.Fatalf("mcp = %+v", m)
	}
	a, err := cfg.Agents[0].Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(a.Config().ToolProviders); n != 2 {
		t.Fatalf("%d tool providers, want 2", n)
	}
	_ = a.Close() // nothing connected yet: the toolkits are lazy
}

func TestAgentMCP_BadDeclarationsAreRefused(t *testing.T) {
	t.Parallel()
	model := scriptedModel(t)
	for _, tt := range []struct{ yaml, want string }{
		{"agents:\n  - id: a\n    model: openai:gpt-4o-mini\n    mcp:\n      - {command: x, url: 'http://h/mcp'}\n", "either a command or a url"},
		{"agents:\n  - id: a\n    model: openai:gpt-4o-mini\n    mcp:\n      - {name: x}\n", "give a command"},
		{"agents:\n  - id: a\n    model: openai:gpt-4o-mini\n    mcp:\n      - {commnd: x}\n", "commnd"},
		{"agents:\n  - id: a\n    model: openai:gpt-4o-mini\n    mcp:\n      - {url: 'http://h/mcp', inherit_env: true}\n", "apply to command (stdio) servers only"},
	} {
		cfg, err := Parse([]byte(strings.ReplaceAll(tt.yaml, "openai:gpt-4o-mini", model)), "os.yaml")
		if err == nil {
			_, err = cfg.Agents[0].Build(nil)
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want %q", tt.yaml, err, tt.want)
		}
	}
}

func TestParse_MultiMCPToolsNamesTheNewForm(t *testing.T) {
	t.Parallel()
	for _, y := range []string{
		"agents:\n  - id: a\n    tools: [MultiMCPTools]\n",
		"agents:\n  - id: a\n    tools:\n      - name: MultiMCPTools\n",
		"agents:\n  - id: a\n    MultiMCPTools:\n      commands: [x]\n",
	} {
		_, err := Parse([]byte(y), "os.yaml")
		if err == nil || !strings.Contains(err.Error(), "MultiMCPTools") || !strings.Contains(err.Error(), "mcp: [{command: …} | {url: …}]") {
			t.Errorf("%q: %v", y, err)
		}
	}
}

func TestAgentMCP_ExpandsEnvironmentInCredentials(t *testing.T) {
	t.Setenv("AGENTRY_TEST_MCP_TOKEN", "t0k")
	m := MCPClient{URL: "http://h/mcp", BearerToken: "${AGENTRY_TEST_MCP_TOKEN}", Headers: map[string]string{"X-K": "k-${AGENTRY_TEST_MCP_TOKEN}"}}
	if _, err := m.toolkit(); err != nil {
		t.Fatal(err)
	}
	m.BearerToken = "${AGENTRY_TEST_MCP_UNSET}"
	if _, err := m.toolkit(); err == nil || !strings.Contains(err.Error(), "AGENTRY_TEST_MCP_UNSET") {
		t.Fatalf("unset variable: %v", err)
	}
	m = MCPClient{Command: "x", Env: map[string]string{"A": "${AGENTRY_TEST_MCP_UNSET}"}}
	if _, err := m.toolkit(); err == nil || !strings.Contains(err.Error(), "env.A") {
		t.Fatalf("unset env variable: %v", err)
	}
}

// Servers of one agent left unnamed get distinct default names: two npx
// servers, or two on one host, were both named "npx" (or the host), and
// when both had resources their <name>_read_resource tools clashed and
// every run of the agent was refused. A name given stays as given.
func TestAgentMCP_UnnamedServersGetDistinctNames(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte(`agents:
  - id: a
    model: `+scriptedModel(t)+`
    mcp:
      - command: npx
        args: [-y, "@modelcontextprotocol/server-filesystem", ./docs]
      - command: npx
        args: [-y, "@modelcontextprotocol/server-memory"]
      - url: http://127.0.0.1:8001/mcp
      - url: http://127.0.0.1:8002/mcp
      - url: http://127.0.0.1:8003/mcp
        name: mine
`), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, err := cfg.Agents[0].Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var names []string
	for _, p := range a.Config().ToolProviders {
		names = append(names, p.(interface{ Name() string }).Name())
	}
	if want := []string{"npx", "npx_2", "127_0_0_1", "127_0_0_1_2", "mine"}; !slices.Equal(names, want) {
		t.Errorf("server names %q, want %q", names, want)
	}
}

// mcp_server: {enabled: false, …} and a JWT cookie_name with token_source
// header were accepted and did nothing; they are refused naming the key.
func TestValidate_SettingsOfAnOffFeatureAreRefused(t *testing.T) {
	t.Parallel()
	for yml, want := range map[string]string{
		"mcp_server: {enabled: false, stateless: true}\n":         "mcp_server.stateless applies to an enabled MCP server",
		"mcp_server: {enabled: false, path: /x}\n":                "mcp_server.path applies to an enabled MCP server",
		"mcp_server: {enabled: false, tools: [calculator]}\n":     "mcp_server.tools applies to an enabled MCP server",
		"mcp_server: {enabled: false, result_mode: full}\n":       "mcp_server.result_mode applies to an enabled MCP server",
		"mcp_server: {enabled: false, include_tags: [core]}\n":    "mcp_server.include_tags applies to an enabled MCP server",
		"auth: {jwt: {verification_keys: [x], cookie_name: c}}\n": "auth.jwt.cookie_name applies with token_source cookie or both",
	} {
		cfg, err := Parse([]byte(yml), "os.yaml")
		if err != nil {
			t.Fatalf("%q: %v", yml, err)
		}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", yml, err, want)
		}
	}
	for _, yml := range []string{"mcp_server: false\n", "mcp_server: {enabled: false}\n", "mcp_server: {stateless: true, path: /x}\n",
		"auth: {jwt: {verification_keys: [x], token_source: both, cookie_name: c}}\n"} {
		cfg, err := Parse([]byte(yml), "os.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%q: %v", yml, err)
		}
	}
}
