// Package agentos is Agentry's HTTP server, wire-compatible with Agno's AgentOS:
// routing, CORS, request ids, access logs, auth and per-user scoping, SSE,
// form and pagination decoding. It is the only package that knows HTTP. The
// whole API is the route table in routes.go.
package agentos
