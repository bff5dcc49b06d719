package mcpserver

import (
	"context"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/agentos/auth"
)

// filterToolsList is the receiving middleware that, with Authorization on,
// answers tools/list with the tools the caller may call (on some object),
// as get_agentos_config lists the agents it may read: a caller does not
// learn the name, description and schema of a shell or SQL tool it may not
// run. The answer is then private to the caller (MCP's cacheScope), so that
// no intermediary serves it to another.
func (s *Server) filterToolsList(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		list, ok := res.(*mcp.ListToolsResult)
		if err != nil || !ok || !s.cfg.Authorization {
			return res, err
		}
		p := principalOf(req.GetExtra())
		list.Tools = slices.DeleteFunc(list.Tools, func(t *mcp.Tool) bool { return !s.mayCall(p, t.Name) })
		list.CacheScope = "private"
		return list, nil
	}
}

// mayCall reports whether p passes the scope check of the tool name for some
// object: a configured tool's tools:<name>:run, a built-in tool's own check
// (the one its handler makes) on one of the objects it could name; a grant
// for every agent (team, workflow) lists its run tools even while none is
// served.
func (s *Server) mayCall(p *auth.Principal, name string) bool {
	if s.userTools[name] {
		return p.Can("tools", name, "run")
	}
	runsSome := func(kinds ...string) bool {
		for _, kind := range kinds {
			if p.Can(kind, "", "run") {
				return true
			}
			for id := range s.targets[kind] {
				if p.Can(kind, id, "run") {
					return true
				}
			}
		}
		return false
	}
	switch name {
	case "get_agentos_config":
		return p.Can("config", "", "read")
	case "run_agent":
		return runsSome(kindAgents)
	case "run_team":
		return runsSome(kindTeams)
	case "run_workflow":
		return runsSome(kindWorkflows)
	case "continue_run":
		return runsSome(kindAgents, kindTeams)
	case "cancel_run":
		return runsSome(kindAgents, kindTeams, kindWorkflows)
	case "get_sessions":
		return p.Can("sessions", "", "read")
	case "get_session_runs":
		return p.CanSome("sessions", "read")
	case "get_memories":
		return p.Can("memories", "", "read")
	}
	return false
}
