// Package mcptool gives agents the tools of MCP servers: a Toolkit connects
// (lazily) to one server over stdio or streamable HTTP, lists its tools
// (again after tools/list_changed), calls them with timeouts and output caps,
// and exposes the server's resources as a read tool. It is an
// agent.ToolProvider; several toolkits give an agent several servers.
package mcptool
