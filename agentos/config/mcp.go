package config

import (
	"fmt"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/mcp/mcpserver"
	"github.com/agentryhq/agentry/mcp/mcptool"
)

// MCPClient is one MCP server an agent uses: {command: …} (stdio) or
// {url: …} (streamable HTTP). Connections open on the agent's first run and
// close when the server stops.
type MCPClient struct {
	// Name names the server in errors and its resource tool; default the
	// command's base name or the URL's host.
	Name string `yaml:"name"`
	// Command, Args, Env (added to the environment) start a stdio server.
	Command string            `yaml:"command"`
	Args    []string          `yaml:"args"`
	Env     map[string]string `yaml:"env"`
	// URL, Headers and BearerToken reach a streamable HTTP server.
	URL         string            `yaml:"url"`
	Headers     map[string]string `yaml:"headers"`
	BearerToken string            `yaml:"bearer_token"`
	// IncludeTools, ExcludeTools and ToolNamePrefix select and rename tools.
	IncludeTools   []string `yaml:"include_tools"`
	ExcludeTools   []string `yaml:"exclude_tools"`
	ToolNamePrefix string   `yaml:"tool_name_prefix"`
	// Timeout bounds one call (default 60s); MaxOutputBytes caps its result
	// (default 64KiB).
	Timeout        time.Duration `yaml:"timeout"`
	MaxOutputBytes ByteSize      `yaml:"max_output_bytes"`
}

// toolkit builds the client (no I/O).
func (m MCPClient) toolkit() (*mcptool.Toolkit, error) {
	return mcptool.New(mcptool.Config{Name: m.Name, Command: m.Command, Args: m.Args, Env: m.Env, URL: m.URL, Headers: m.Headers,
		BearerToken: m.BearerToken, Include: m.IncludeTools, Exclude: m.ExcludeTools, Prefix: m.ToolNamePrefix,
		Timeout: m.Timeout, MaxOutputBytes: int(m.MaxOutputBytes)})
}

// mcpProviders builds an agent's MCP toolkits.
func mcpProviders(where string, decl []MCPClient) ([]agent.ToolProvider, error) {
	var out []agent.ToolProvider
	for i, m := range decl {
		k, err := m.toolkit()
		if err != nil {
			return nil, fmt.Errorf("config: %s: mcp[%d]: %w", where, i, err)
		}
		out = append(out, k)
	}
	return out, nil
}

// options are the server options without the tools (built by Options).
func (m MCPServer) options() mcpserver.Options {
	return mcpserver.Options{Stateless: m.Stateless, EnableBuiltinTools: m.EnableBuiltinTools, IncludeTags: m.IncludeTags,
		ExcludeTags: m.ExcludeTags, ResultMode: m.ResultMode, MaxResultBytes: int(m.MaxResultBytes)}
}

// Options turns the declaration into the MCP server's options, building its
// tools.
func (m MCPServer) Options() (mcpserver.Options, error) {
	o := m.options()
	var err error
	o.Tools, err = builtinTools("mcp_server", m.Tools)
	return o, err
}
