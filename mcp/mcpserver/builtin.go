package mcpserver

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// The built-in tools, named and shaped after Agno 3.0's MCP server.

type configIn struct{}

type runIn struct {
	AgentID    string `json:"agent_id,omitempty" jsonschema:"the agent id from get_agentos_config"`
	TeamID     string `json:"team_id,omitempty" jsonschema:"the team id from get_agentos_config"`
	WorkflowID string `json:"workflow_id,omitempty" jsonschema:"the workflow id from get_agentos_config"`
	Message    string `json:"message" jsonschema:"the message to run with"`
	UserID     string `json:"user_id,omitempty" jsonschema:"the user to run as (a non-admin authenticated caller always runs as itself)"`
	SessionID  string `json:"session_id,omitempty" jsonschema:"a session to continue; omit to start a new one"`
}

// turnIn is a run's input: the message, the user and the session.
type turnIn struct {
	Message   string `json:"message" jsonschema:"the message to run with"`
	UserID    string `json:"user_id,omitempty" jsonschema:"the user to run as (a non-admin authenticated caller always runs as itself)"`
	SessionID string `json:"session_id,omitempty" jsonschema:"a session to continue; omit to start a new one"`
}

type agentRunIn struct {
	AgentID string `json:"agent_id" jsonschema:"the agent id from get_agentos_config"`
	turnIn
}

type teamRunIn struct {
	TeamID string `json:"team_id" jsonschema:"the team id from get_agentos_config"`
	turnIn
}

type workflowRunIn struct {
	WorkflowID string `json:"workflow_id" jsonschema:"the workflow id from get_agentos_config"`
	turnIn
}

// runRef names a run and the agent, team or workflow that owns it.
type runRef struct {
	RunID      string `json:"run_id" jsonschema:"the run id"`
	SessionID  string `json:"session_id,omitempty" jsonschema:"the run's session id"`
	AgentID    string `json:"agent_id,omitempty" jsonschema:"the agent owning the run (exactly one of agent_id, team_id, workflow_id)"`
	TeamID     string `json:"team_id,omitempty" jsonschema:"the team owning the run"`
	WorkflowID string `json:"workflow_id,omitempty" jsonschema:"the workflow owning the run"`
}

type lifecycleIn struct {
	runRef
	// Requirements are decoded once, from the call's raw arguments
	// (requirementsArg): the field only names them in the input schema.
	Requirements requirementsField `json:"requirements,omitempty" jsonschema:"continue_run: the paused run's requirements with their resolution fields set"`
	UserID       string            `json:"user_id,omitempty" jsonschema:"the user to continue as (a non-admin authenticated caller always acts as itself)"`
}

type cancelIn struct{ runRef }

type sessionsIn struct {
	SessionType string `json:"session_type,omitempty" jsonschema:"agent (default), team or workflow"`
	ComponentID string `json:"component_id,omitempty" jsonschema:"an agent, team or workflow id"`
	UserID      string `json:"user_id,omitempty" jsonschema:"only this user's sessions (a user-scoped caller only ever sees its own)"`
	SessionName string `json:"session_name,omitempty" jsonschema:"a substring of the session name"`
	Limit       int    `json:"limit,omitempty" jsonschema:"page size from 1 to 1000, default 20"`
	Page        int    `json:"page,omitempty" jsonschema:"page number from 1"`
	SortBy      string `json:"sort_by,omitempty" jsonschema:"created_at (default) or updated_at"`
	SortOrder   string `json:"sort_order,omitempty" jsonschema:"desc (default) or asc"`
	DBID        string `json:"db_id,omitempty" jsonschema:"only needed when get_agentos_config lists several databases"`
}

type memoriesIn struct {
	UserID        string   `json:"user_id,omitempty" jsonschema:"only this user's memories (a user-scoped caller only ever sees its own)"`
	AgentID       string   `json:"agent_id,omitempty" jsonschema:"only memories written by this agent"`
	TeamID        string   `json:"team_id,omitempty" jsonschema:"only memories written by this team"`
	Topics        []string `json:"topics,omitempty" jsonschema:"keep memories having any of these topics"`
	SearchContent string   `json:"search_content,omitempty" jsonschema:"a case-insensitive substring of the memory text"`
	Limit         int      `json:"limit,omitempty" jsonschema:"page size from 1 to 1000, default 20"`
	Page          int      `json:"page,omitempty" jsonschema:"page number from 1"`
	SortBy        string   `json:"sort_by,omitempty" jsonschema:"updated_at (default) or created_at"`
	SortOrder     string   `json:"sort_order,omitempty" jsonschema:"desc (default) or asc"`
	DBID          string   `json:"db_id,omitempty" jsonschema:"only needed when get_agentos_config lists several databases"`
}

type sessionRunsIn struct {
	SessionID   string `json:"session_id" jsonschema:"the session id"`
	RunID       string `json:"run_id,omitempty" jsonschema:"return this one run in full detail"`
	SessionType string `json:"session_type,omitempty" jsonschema:"agent, team or workflow; any when omitted"`
	UserID      string `json:"user_id,omitempty" jsonschema:"the session's user (a user-scoped caller only ever sees its own)"`
	DBID        string `json:"db_id,omitempty" jsonschema:"only needed when get_agentos_config lists several databases"`
}

// BuiltinTools lists the built-in tool names with their tag.
var BuiltinTools = []struct{ Name, Tag string }{
	{"get_agentos_config", TagCore}, {"run_agent", TagCore}, {"run_team", TagCore}, {"run_workflow", TagCore},
	{"continue_run", TagCore}, {"cancel_run", TagCore}, {"get_sessions", TagSession}, {"get_session_runs", TagSession},
	{"get_memories", TagSession},
}

func boolp(b bool) *bool { return &b }

func (s *Server) addBuiltins(tags map[string]bool) error {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true}
	runs := &mcp.ToolAnnotations{OpenWorldHint: boolp(true)}
	if tags[TagCore] {
		lifecycle, err := lifecycleSchema()
		if err != nil {
			return fmt.Errorf("mcpserver: continue_run's input schema: %w", err)
		}
		addTool(s, &mcp.Tool{Name: "get_agentos_config", Annotations: ro, Description: "Discover this AgentOS: the agents, teams and workflows " +
			"available to run (ids and descriptions) and the database ids the session tools take. Call this first."}, s.getConfig)
		addTool(s, &mcp.Tool{Name: "run_agent", Annotations: runs, Description: "Run an agent with a message and get its response. " +
			"Pass a session_id from get_sessions to continue that conversation; omit it to start a new one (the session_id comes back " +
			"in structuredContent). If the status is PAUSED, resolve the returned requirements and call continue_run."},
			func(ctx context.Context, req *mcp.CallToolRequest, in agentRunIn) (*mcp.CallToolResult, any, error) {
				return s.runComponent(ctx, req, kindAgents, runIn{AgentID: in.AgentID, Message: in.Message, UserID: in.UserID, SessionID: in.SessionID})
			})
		addTool(s, &mcp.Tool{Name: "run_team", Annotations: runs, Description: "Run a team of agents with a message and get its " +
			"response. Same session and PAUSED semantics as run_agent."},
			func(ctx context.Context, req *mcp.CallToolRequest, in teamRunIn) (*mcp.CallToolResult, any, error) {
				return s.runComponent(ctx, req, kindTeams, runIn{TeamID: in.TeamID, Message: in.Message, UserID: in.UserID, SessionID: in.SessionID})
			})
		addTool(s, &mcp.Tool{Name: "run_workflow", Annotations: runs, Description: "Run a workflow with an input message and get its " +
			"result. Can be long-running: progress is reported per step when the client asks for it."},
			func(ctx context.Context, req *mcp.CallToolRequest, in workflowRunIn) (*mcp.CallToolResult, any, error) {
				return s.runComponent(ctx, req, kindWorkflows, runIn{WorkflowID: in.WorkflowID, Message: in.Message, UserID: in.UserID, SessionID: in.SessionID})
			})
		addTool(s, &mcp.Tool{Name: "continue_run", Annotations: &mcp.ToolAnnotations{DestructiveHint: boolp(false)}, InputSchema: lifecycle,
			Description: "Resume a PAUSED agent or team run after resolving its requirements (human-in-the-loop): set the resolution " +
				"fields on the requirements a run tool returned (e.g. tool_execution.confirmed=true) and pass them back with the run_id, its " +
				"session_id and the agent_id or team_id."},
			s.continueRun)
		addTool(s, &mcp.Tool{Name: "cancel_run", Annotations: &mcp.ToolAnnotations{DestructiveHint: boolp(true), IdempotentHint: true},
			Description: "Request cancellation of a run in progress: it stops and is stored CANCELLED. Give the run_id, its session_id and " +
				"exactly one of agent_id, team_id, workflow_id."}, s.cancelRun)
	}
	if tags[TagSession] {
		addTool(s, &mcp.Tool{Name: "get_sessions", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
			Description: "List past sessions (conversations), newest first. Filter by session_type, component_id, user or " +
				"session_name. Use a session_id with the run tools to continue it, or with get_session_runs to read its history."}, s.getSessions)
		addTool(s, &mcp.Tool{Name: "get_session_runs", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
			Description: "Read a session's history: each run's input and answer with run_id, status and time, oldest first. Pass " +
				"run_id to get that one run in full (the whole transcript, events and metrics: it can be large)."}, s.getSessionRuns)
		addTool(s, &mcp.Tool{Name: "get_memories", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
			Description: "List stored user memories (facts agents keep about a user), most recently updated first. Filter by " +
				"user_id, agent_id, team_id, topics or a search_content substring."}, s.getMemories)
	}
	return nil
}

type summary struct {
	ID          string `json:"id"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	DBID        string `json:"db_id,omitempty"`
}

func (s *Server) getConfig(ctx context.Context, req *mcp.CallToolRequest, _ configIn) (*mcp.CallToolResult, any, error) {
	c, err := s.begin(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	if err := s.authorize(c, "config", "", "read"); err != nil {
		return nil, nil, err
	}
	list := func(kind string, ids []string, describe func(id string) summary) []summary {
		out := []summary{}
		for _, id := range ids {
			if s.cfg.Authorization && !c.p.Can(kind, id, "read") {
				continue
			}
			out = append(out, describe(id))
		}
		return out
	}
	dbID := func(t Target) string {
		if d := t.DB(); d != nil {
			return d.ID
		}
		return ""
	}
	agents := list(kindAgents, idsOf(s.cfg.Agents), func(id string) summary {
		a := s.targets[kindAgents][id].(*agent.Agent)
		return summary{ID: id, Name: a.Name(), Description: a.Config().Description, DBID: dbID(a)}
	})
	teams := list(kindTeams, idsOf(s.cfg.Teams), func(id string) summary {
		t := s.targets[kindTeams][id].(*team.Team)
		return summary{ID: id, Name: t.Name(), Description: t.Config().Description, DBID: dbID(t)}
	})
	workflows := list(kindWorkflows, idsOf(s.cfg.Workflows), func(id string) summary {
		w := s.targets[kindWorkflows][id].(*workflow.Workflow)
		return summary{ID: id, Name: w.Name(), Description: w.Config().Description, DBID: dbID(w)}
	})
	dbs := make([]string, len(s.dbs))
	for i, d := range s.dbs {
		dbs[i] = d.ID
	}
	return nil, map[string]any{"os_id": s.cfg.OSID, "description": s.cfg.Description, "databases": dbs,
		"agents": agents, "teams": teams, "workflows": workflows}, nil
}

func idsOf[T interface{ ID() string }](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.ID()
	}
	return out
}

// pick names the target of a call given exactly one of the three ids.
func pick(agentID, teamID, workflowID string) (kind, id string, err error) {
	n := 0
	for _, id := range []string{agentID, teamID, workflowID} {
		if id != "" {
			n++
		}
	}
	if n != 1 {
		return "", "", fmt.Errorf("%w: give exactly one of agent_id, team_id, workflow_id", ErrInvalidInput)
	}
	switch {
	case teamID != "":
		return kindTeams, teamID, nil
	case workflowID != "":
		return kindWorkflows, workflowID, nil
	}
	return kindAgents, agentID, nil
}

// lookup finds a picked target. Callers authorize the call on kind and id
// first, as the HTTP routes check the scope before looking for the object:
// a caller without the scope learns nothing of which ids exist.
func (s *Server) lookup(kind, id string) (Target, error) {
	t, ok := s.targets[kind][id]
	if !ok {
		return nil, fmt.Errorf("%w: %s %q (get_agentos_config lists the ids)", ErrNotFound, kind[:len(kind)-1], id)
	}
	return t, nil
}

// runCall resolves the run's owner and begins a call allowed to run it.
func (s *Server) runCall(ctx context.Context, req *mcp.CallToolRequest, r runRef) (*call, string, Target, error) {
	kind, id, err := pick(r.AgentID, r.TeamID, r.WorkflowID)
	if err != nil {
		return nil, "", nil, err
	}
	c, err := s.begin(ctx, req)
	if err != nil {
		return nil, "", nil, err
	}
	if err := s.authorize(c, kind, id, "run"); err != nil {
		return nil, "", nil, err
	}
	t, err := s.lookup(kind, id)
	if err != nil {
		return nil, "", nil, err
	}
	return c, kind, t, nil
}

// idContinuer is a target whose PAUSED runs continue_run resumes: an agent,
// or a team (whose member runs that paused it are continued).
type idContinuer interface {
	ContinueRunID(ctx context.Context, runID string, opts ...agent.RunOption) (*run.Output, error)
}

var (
	_ idContinuer = (*agent.Agent)(nil)
	_ idContinuer = (*team.Team)(nil)
)

func (s *Server) continueRun(ctx context.Context, req *mcp.CallToolRequest, in lifecycleIn) (*mcp.CallToolResult, any, error) {
	c, kind, t, err := s.runCall(ctx, req, in.runRef)
	if err != nil {
		return nil, nil, err
	}
	a, ok := t.(idContinuer)
	if !ok {
		return nil, nil, fmt.Errorf("%w: only agent and team runs can be continued here; a paused workflow run is continued with its "+
			"step answers through POST /workflows/{workflow_id}/runs/{run_id}/continue", ErrInvalidInput)
	}
	if t.DB() == nil {
		// Nothing is stored to continue from, as the HTTP continue route.
		return nil, nil, fmt.Errorf("%w: run %s of %s %s (it has no database to store paused runs in)", ErrNotFound, in.RunID, kind[:len(kind)-1], t.ID())
	}
	// A caller continues its own user's runs (callerUser), as it starts
	// them: another user's run is not found.
	row, err := s.ownRun(c, kind, t, in.runRef, callerUser(c, in.UserID))
	if err != nil {
		return nil, nil, err
	}
	var opts []agent.RunOption
	reqs, err := requirementsArg(req)
	if err != nil {
		return nil, nil, err
	}
	if len(reqs) > 0 {
		opts = append(opts, agent.WithRequirements(reqs))
	}
	// The continued run is the stored run's, whoever continues it: it is
	// registered and observed under its own user and session, as the HTTP
	// continue route does.
	runCtx := c.ctx
	if s.cfg.Begin != nil {
		var end func()
		if runCtx, end, err = s.cfg.Begin(runCtx, t, in.RunID, row.UserID); err != nil {
			return nil, nil, shown(err)
		}
		defer end()
	}
	c.progress(0, 0, "Continuing run "+in.RunID)
	call := func(ctx context.Context) (*run.Output, error) { return a.ContinueRunID(ctx, in.RunID, opts...) }
	var out *run.Output
	if s.cfg.ObserveCall != nil {
		out, err = s.cfg.ObserveCall(runCtx, t, in.RunID, row.SessionID, row.UserID, call)
	} else {
		out, err = call(runCtx)
	}
	if out == nil {
		return nil, nil, err
	}
	return s.runResult(ctx, "continue_run", out, err)
}

// ownRun checks that the run exists for the caller and belongs to the
// target and, when given, to the session, and returns its stored row (nil
// for a target without a database). A run executing in this process is
// checked against the user it was registered for (a target without a
// database stores no row to check, yet registers its runs); a stored run is
// read with the caller's user scope. Another user's run is not found, and
// so is a run of another user than the one named (user_id) by a caller
// acting for every user.
func (s *Server) ownRun(c *call, kind string, t Target, r runRef, named string) (*db.Run, error) {
	missing := fmt.Errorf("%w: run %s of %s %s", ErrNotFound, r.RunID, kind[:len(kind)-1], t.ID())
	if e, ok := run.DefaultRegistry().Lookup(r.RunID); ok && !callerOwns(c, e.Registration().UserID, named) {
		return nil, missing
	}
	d := t.DB()
	if d == nil {
		return nil, nil
	}
	row, err := d.GetRun(c.ctx, r.RunID)
	if err != nil {
		return nil, notFound(err, "run %s", r.RunID)
	}
	owner := row.AgentID
	switch kind {
	case kindTeams:
		owner = row.TeamID
	case kindWorkflows:
		owner = row.WorkflowID
	}
	if owner != t.ID() || (r.SessionID != "" && row.SessionID != r.SessionID) || !callerOwns(c, row.UserID, named) {
		return nil, missing
	}
	return row, nil
}

// callerOwns reports whether the caller may act on an object of owner, as
// agentos's actAs: a user-scoped caller only on its own; any other caller
// on the named user's, or every user's when it names none.
func callerOwns(c *call, owner, named string) bool {
	if u, scoped := db.UserScope(c.ctx); scoped {
		return owner == u
	}
	return named == "" || owner == named
}

func (s *Server) cancelRun(ctx context.Context, req *mcp.CallToolRequest, in cancelIn) (*mcp.CallToolResult, any, error) {
	c, kind, t, err := s.runCall(ctx, req, in.runRef)
	if err != nil {
		return nil, nil, err
	}
	if _, err := s.ownRun(c, kind, t, in.runRef, ""); err != nil {
		return nil, nil, err
	}
	if !t.CancelRun(in.RunID) {
		return nil, nil, fmt.Errorf("%w: run %s is not in progress on this server", ErrNotFound, in.RunID)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Run %s cancellation requested", in.RunID)}}}, nil, nil
}

var sessionTypes = []string{string(run.TypeAgent), string(run.TypeTeam), string(run.TypeWorkflow)}

func checkSessionType(t string) error {
	if t != "" && !slices.Contains(sessionTypes, t) {
		return fmt.Errorf("%w: session_type %q: use agent, team or workflow", ErrInvalidInput, t)
	}
	return nil
}
