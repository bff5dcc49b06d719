package agentos

import (
	"context"
	"net/http"

	"github.com/agentryhq/agentry/agentos/config"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/mcp/mcpserver"
	"github.com/agentryhq/agentry/run"
)

// MCP configures the MCP endpoint (the config file's mcp_server).
type MCP struct {
	// Enabled mounts the endpoint; Path defaults to /mcp.
	Enabled bool
	Path    string
	Options mcpserver.Options
}

// newMCP builds the MCP server over the OS's agents, teams, workflows and
// databases. Calls are authenticated by the OS middleware (401 without a
// token), scoped by user isolation and authorized per tool; runs join the
// run registry (cancel route, graceful shutdown).
func (s *Server) newMCP() (*mcpserver.Server, error) {
	c := s.cfg
	return mcpserver.New(mcpserver.Config{
		Name: c.Name, Version: c.Version, OSID: c.ID, Description: c.Description,
		Agents: c.Agents, Teams: c.Teams, Workflows: c.Workflows, DBs: s.dbs,
		Options:       c.MCP.Options,
		Scope:         func(ctx context.Context) (context.Context, error) { return scopeContext(ctx, c.UserIsolation) },
		Authorization: c.Auth.Authorization && c.Auth.Authenticator.Enabled(),
		Begin: func(ctx context.Context, t mcpserver.Target, runID, userID string) (context.Context, func(), error) {
			rt, ok := t.(runTarget)
			if !ok {
				return ctx, func() {}, nil
			}
			// A new run's id is fresh; a continued run's may still be let
			// go of by the execution that paused it: its continue waits
			// for that, as the HTTP continue route's does.
			ctx, f, err := s.runs.beginAfterFlight(ctx, runID, rt.Component(), userID, cancelWait)
			if err != nil {
				return nil, nil, beginErr(err)
			}
			return ctx, func() { s.runs.end(runID, f) }, nil
		},
		// Runs started by a tool are observed as the HTTP routes' runs: a run
		// span carrying the caller's user (stored traces are isolated by
		// it), under the request's span, and agentry_runs_total.
		Observe: func(t mcpserver.Target, runID, sessionID, userID string) mcpserver.Streamer {
			if rt, ok := t.(runTarget); ok {
				return s.observed(rt, runID, sessionID, userID)
			}
			return t
		},
		ObserveCall: func(ctx context.Context, t mcpserver.Target, runID, sessionID, userID string, call func(context.Context) (*run.Output, error)) (*run.Output, error) {
			rt, ok := t.(runTarget)
			if !ok {
				return call(ctx)
			}
			// The continue (registered by Begin, as the continue route's
			// is) holds the durable queue's lease, as the continue route's
			// does (leaseContinue); a run that is not PAUSED is refused by
			// the continue itself.
			if d := rt.DB(); d != nil && s.queue != nil {
				if row, err := d.GetRun(ctx, runID); err == nil && row.Status == run.StatusPaused {
					hctx, release, err := s.leaseContinue(ctx, d, row)
					if err != nil {
						return nil, err
					}
					defer release()
					ctx = hctx
				}
			}
			return s.observedCall(ctx, rt, &db.Run{RunID: runID, SessionID: sessionID, UserID: userID}, call)
		},
		Logger: s.log,
	})
}

// mcpRows are the MCP endpoint's rows of the route table (none when it is
// off): POST carries messages, GET the server's stream, DELETE ends a
// session. Authentication applies as to every route; scopes are checked per
// tool call (perCall).
func (s *Server) mcpRows() []route {
	if s.mcp == nil {
		return nil
	}
	path := s.cfg.MCP.Path
	if path == "" {
		path = config.DefaultMCPPath
	}
	h := func(w http.ResponseWriter, r *http.Request) error {
		s.mcp.ServeHTTP(w, r)
		return nil
	}
	return []route{{"POST", path, perCall, h}, {"GET", path, perCall, h}, {"DELETE", path, perCall, h}}
}
