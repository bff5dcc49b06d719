package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// Errors a tool call answers with (as MCP tool errors).
var (
	// ErrForbidden: the caller's scopes do not allow the tool on that object.
	ErrForbidden = errors.New("insufficient permissions")
	// ErrNotFound: the agent, team, workflow, session, run or database does
	// not exist (for this caller).
	ErrNotFound = errors.New("not found")
	// ErrInvalidInput: an argument has a value the tool cannot use.
	ErrInvalidInput = errors.New("invalid input")
)

// Target is what the run tools execute: an *agent.Agent, *team.Team or
// *workflow.Workflow (an agent.Runner with an ID and a Name).
type Target interface {
	Component() run.Component
	ID() string
	Name() string
	DB() *db.DB
	Stream(ctx context.Context, input run.Input, opts ...agent.RunOption) iter.Seq2[run.Event, error]
	CancelRun(runID string) bool
}

// Streamer is what a run tool streams: a Target, or a Target wrapped by
// Config.Observe.
type Streamer interface {
	Stream(ctx context.Context, input run.Input, opts ...agent.RunOption) iter.Seq2[run.Event, error]
}

// SessionIdleTimeout closes an MCP session no request used for this long
// (stateful mode), so abandoned clients do not hold memory forever.
const SessionIdleTimeout = 30 * time.Minute

// Server is the MCP endpoint of an AgentOS. It is an http.Handler to mount
// behind the OS's authentication middleware (auth.FromContext is read).
type Server struct {
	cfg     Config
	log     *slog.Logger
	mcp     *mcp.Server
	stream  http.Handler
	bearer  http.Handler
	targets map[string]map[string]Target // kind -> id -> target
	dbs     []*db.DB
	dbByID  map[string]*db.DB
	userSet *tool.Set
	// userTools names the configured tools (tools:<name>:run).
	userTools map[string]bool
}

// Kinds of targets, as the REST resources are named.
const (
	kindAgents    = "agents"
	kindTeams     = "teams"
	kindWorkflows = "workflows"
)

// New builds the server and registers its tools.
func New(cfg Config) (*Server, error) {
	if err := cfg.Options.Validate(); err != nil {
		return nil, err
	}
	if cfg.Options.ResultMode == "" {
		cfg.Options.ResultMode = ResultTrimmed
	}
	if cfg.Options.MaxResultBytes == 0 {
		cfg.Options.MaxResultBytes = DefaultMaxResultBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Name == "" {
		cfg.Name = "agentry"
	}
	s := &Server{cfg: cfg, log: cfg.Logger, dbByID: map[string]*db.DB{},
		targets: map[string]map[string]Target{kindAgents: {}, kindTeams: {}, kindWorkflows: {}}}
	addDB := func(d *db.DB) {
		if d != nil && s.dbByID[d.ID] == nil {
			s.dbByID[d.ID] = d
			s.dbs = append(s.dbs, d)
		}
	}
	for _, d := range cfg.DBs {
		addDB(d)
	}
	for _, a := range cfg.Agents {
		s.targets[kindAgents][a.ID()] = a
		addDB(a.DB())
	}
	for _, t := range cfg.Teams {
		s.targets[kindTeams][t.ID()] = t
		addDB(t.DB())
	}
	for _, w := range cfg.Workflows {
		s.targets[kindWorkflows][w.ID()] = w
		addDB(w.DB())
	}
	var err error
	if s.userSet, err = tool.NewSet(cfg.Options.Tools); err != nil {
		return nil, fmt.Errorf("mcpserver: tools: %w", err)
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: cfg.Name, Version: cfg.Version}, &mcp.ServerOptions{Logger: cfg.Logger})
	s.mcp.AddReceivingMiddleware(s.filterToolsList)
	if err := s.addBuiltins(cfg.Options.builtinTags()); err != nil {
		return nil, err
	}
	if err := s.addUserTools(); err != nil {
		return nil, err
	}
	s.stream = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp },
		&mcp.StreamableHTTPOptions{Stateless: cfg.Options.Stateless, Logger: cfg.Logger, SessionTimeout: SessionIdleTimeout,
			// The OS's own authentication guards /mcp; the SDK's
			// localhost check would refuse proxies and test hosts.
			DisableLocalhostProtection: true})
	s.bearer = sdkauth.RequireBearerToken(principalToken, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(s.stream)
	return s, nil
}

// ServeHTTP serves the streamable HTTP transport. An authenticated request's
// principal becomes the MCP session's user: the session id is then not
// found (404) for any other user or an unauthenticated request, and every
// tool call runs as that principal.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Mcp-Session-Id") != "" {
		w = &hiddenSession{ResponseWriter: w}
	}
	if _, ok := auth.FromContext(r.Context()); !ok {
		s.stream.ServeHTTP(w, r)
		return
	}
	// The bridge below reads the principal, not the header, but the SDK
	// middleware wants a bearer one; a request authenticated by cookie may
	// carry none, or another scheme's (a proxy's basic credentials) that the
	// OS never read.
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer principal")
	s.bearer.ServeHTTP(w, r)
}

// hiddenSession answers the SDK's refusal of another user's session
// ("session user mismatch", 403: the only 403 the SDK's handler and bearer
// middleware give, as configured here) as the SDK answers a session that
// does not exist: another user's object is not found, never forbidden.
type hiddenSession struct {
	http.ResponseWriter
	hidden bool
}

func (h *hiddenSession) WriteHeader(code int) {
	if code != http.StatusForbidden {
		h.ResponseWriter.WriteHeader(code)
		return
	}
	h.hidden = true
	h.ResponseWriter.WriteHeader(http.StatusNotFound)
	_, _ = io.WriteString(h.ResponseWriter, "session not found\n")
}

// Write drops the refusal's own text.
func (h *hiddenSession) Write(p []byte) (int, error) {
	if h.hidden {
		return len(p), nil
	}
	return h.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (flushes of
// the SDK's event streams).
func (h *hiddenSession) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// principalKey holds the principal in TokenInfo.Extra.
const principalKey = "agentry.principal"

// principalToken bridges the OS's verified principal (already in the
// request context) to the SDK's TokenInfo; the token itself was verified by
// the OS middleware. The TokenInfo carries no Expiration: the OS checked exp
// with its clock-skew leeway and its clock, and the SDK's second check (no
// leeway, the wall clock) would refuse a token every HTTP route accepts.
func principalToken(ctx context.Context, _ string, r *http.Request) (*sdkauth.TokenInfo, error) {
	p, ok := auth.FromContext(r.Context())
	if !ok {
		return nil, sdkauth.ErrInvalidToken
	}
	return &sdkauth.TokenInfo{UserID: sessionOwner(p), Scopes: p.Scopes, Extra: map[string]any{principalKey: p}}, nil
}

// sessionOwner names who may use an MCP session: the token's user, or the
// security key.
func sessionOwner(p *auth.Principal) string {
	if p.UserID == "" {
		return "security-key"
	}
	return "user:" + p.UserID
}

// Handler returns the server as an http.Handler.
func (s *Server) Handler() http.Handler { return s }

// MCP returns the SDK server, e.g. to serve it over another transport.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// call is one tool call's caller: its context (principal and user scope
// applied), the principal (nil on an open server) and the progress channel.
type call struct {
	ctx context.Context
	p   *auth.Principal
	req *mcp.CallToolRequest
}

// principalOf is the principal principalToken put in a request's token
// info; nil when there is none.
func principalOf(extra *mcp.RequestExtra) *auth.Principal {
	if extra == nil || extra.TokenInfo == nil {
		return nil
	}
	p, _ := extra.TokenInfo.Extra[principalKey].(*auth.Principal)
	return p
}

// begin derives the call's context from the request's token info.
func (s *Server) begin(ctx context.Context, req *mcp.CallToolRequest) (*call, error) {
	c := &call{ctx: ctx, req: req}
	if req != nil {
		c.p = principalOf(req.Extra)
	}
	if c.p != nil {
		c.ctx = auth.NewContext(c.ctx, c.p)
	}
	if s.cfg.Scope != nil {
		var err error
		if c.ctx, err = s.cfg.Scope(c.ctx); err != nil {
			return nil, shown(err)
		}
	}
	return c, nil
}

// authorize enforces resource:action (on id, "" for collections). With
// Authorization on, a call without a principal (its path excluded from
// authentication) has nothing to be checked against and is refused, as the
// HTTP routes refuse it.
func (s *Server) authorize(c *call, resource, id, action string) error {
	if !s.cfg.Authorization || c.p.Can(resource, id, action) {
		return nil
	}
	return fmt.Errorf("%w: requires %s:%s", ErrForbidden, resource, action)
}

// progress sends a progress notification when the client asked for them;
// a failure never affects the run.
func (c *call) progress(n, total float64, msg string) {
	if c.req == nil || c.req.Session == nil || c.req.Params == nil {
		return
	}
	tok := c.req.Params.GetProgressToken()
	if tok == nil {
		return
	}
	_ = c.req.Session.NotifyProgress(c.ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: n, Total: total, Message: msg})
}

// addUserTools serves the configured tools through a tool.Set (argument
// validation, timeouts, panic recovery). With Authorization on, calling one
// needs tools:<name>:run (or tools:run): such a tool may be a shell or SQL.
func (s *Server) addUserTools() error {
	s.userTools = map[string]bool{}
	for _, t := range s.userSet.Tools() {
		def := t.Definition()
		s.userTools[def.Name] = true
		schema := def.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		name := def.Name
		s.mcp.AddTool(&mcp.Tool{Name: name, Description: def.Description, InputSchema: schema},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				c, err := s.begin(ctx, req)
				if err != nil {
					return errorResult(s.clientError(ctx, name, err)), nil
				}
				if err := s.authorize(c, "tools", name, "run"); err != nil {
					return errorResult(err), nil
				}
				// Arguments are optional in MCP: none, or null, is no arguments.
				args := "{}"
				if req.Params != nil {
					if raw := bytes.TrimSpace(req.Params.Arguments); len(raw) > 0 && string(raw) != "null" {
						args = string(raw)
					}
				}
				res := s.userSet.Execute(c.ctx, model.ToolCall{Name: name, Arguments: args})
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content}}, IsError: res.IsError()}, nil
			})
	}
	return nil
}

func errorResult(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}, IsError: true}
}
