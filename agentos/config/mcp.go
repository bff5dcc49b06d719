package config

import (
	"github.com/agentryhq/agentry/mcp/mcpserver"
)

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
