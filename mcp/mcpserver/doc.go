// Package mcpserver serves an AgentOS as a Model Context Protocol server
// (Agno 3.0's mcp_server): the eight built-in tools plus get_memories, tag filters, result
// modes and user tools over streamable HTTP, under the OS's authentication.
package mcpserver
