// Package mcp groups Agentry's Model Context Protocol support: mcpserver
// exposes an AgentOS to MCP clients, mcptool gives agents the tools of MCP
// servers. Both are built on github.com/modelcontextprotocol/go-sdk.
package mcp
