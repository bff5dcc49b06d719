package agentos

import (
	"context"
	"errors"
	"fmt"
	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/model"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/agentos/config"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/mcp/mcpserver"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/runlog"
	"github.com/agentryhq/agentry/schedule"
	"github.com/agentryhq/agentry/team"
	"github.com/agentryhq/agentry/workflow"
)

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	// ID, Name, Description and Version describe the OS (GET /, GET /config).
	ID          string
	Name        string
	Description string
	Version     string

	// Telemetry is the control plane's tracing and Prometheus metrics
	// (observe.go); the zero value is off and adds no middleware.
	Telemetry Telemetry

	// Addr to listen on; default 127.0.0.1:7777.
	Addr string
	// CORSOrigins default to config.DefaultCORSOrigins (http://localhost:3000
	// and http://127.0.0.1:3000); "*" allows any origin.
	CORSOrigins []string
	// BodyLimit caps request bodies (413 above it); default 32 MiB.
	BodyLimit int64
	// Server timeouts; zero WriteTimeout means none (SSE streams are long).
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// ShutdownTimeout bounds the graceful stop; default 30s.
	ShutdownTimeout time.Duration
	// WorkflowTimeoutSweep is how often the server applies the HumanReview
	// timeouts of paused workflow runs while it runs (workflow_timeouts.go),
	// safe with several replicas on one database; default 30s, negative
	// turns the sweep off (timers and the pass at start remain).
	WorkflowTimeoutSweep time.Duration

	Auth Auth
	// UserIsolation scopes a non-admin caller's reads and writes to its token's
	// user id; a user_id the caller names cannot widen it.
	UserIsolation bool

	// Agents are served under /agents; ids must be unique.
	Agents []*agent.Agent
	// Teams are served under /teams and Workflows under /workflows; ids must
	// be unique within each kind. Their members and steps need not be listed
	// in Agents.
	Teams     []*team.Team
	Workflows []*workflow.Workflow
	// DBs are extra databases the OS serves besides the agents' own; the first
	// database (from DBs, then from agents in order) is the default for routes
	// without db_id.
	DBs []*db.DB
	// Knowledge are the knowledge bases the /knowledge routes serve; the
	// first is the default, others are chosen by ?knowledge_id=NAME.
	Knowledge []*knowledge.Knowledge

	// MCP serves the OS as an MCP server (mcp_server).
	MCP MCP

	// MediaStorage serves GET /sessions/{id}/media/{key} (the agents'
	// offloaded media); nil answers that route with 404.
	MediaStorage media.Storage

	// CodeModes are the CodeModes of the configured agents and teams
	// (config.BuildOptions.OnCodeMode collects them): deleting a session
	// forgets its interpreters and saved states in those on its database.
	// The caller closes them. Stored components' CodeModes are added by
	// the server, which closes those at Close.
	CodeModes []*codemode.CodeMode

	// MemoryModel answers POST /optimize-memories when the request names no
	// model; nil means the memory model of the first agent (then team) that
	// has one.
	MemoryModel model.Model

	// Queue, when set, runs background runs on the durable queue (package
	// queue) in the default database: crash-safe, bounded, cancellable
	// across replicas. nil keeps the in-process runner, which is not
	// crash-safe: runs of a process that dies stay PENDING or RUNNING.
	Queue *queue.Config

	// Components configures the agents, teams and workflows stored in the
	// default database (the /components routes).
	Components ComponentsConfig

	// BackgroundConcurrency and BackgroundQueueDepth bound the in-process
	// runner (Queue nil): runs executing at once (default 32) and runs
	// waiting for a slot (default 4096; past it 429).
	BackgroundConcurrency int
	BackgroundQueueDepth  int

	// Schedules, when set, runs the cron scheduler (package schedule) on
	// the default database: its firings are durable background runs, so it
	// needs Queue. Serve starts it. nil serves the /schedules routes
	// without firing (trigger answers 503, as Agno without a scheduler).
	Schedules *schedule.Config

	// Logger receives access and error logs; nil means slog.Default().
	Logger *slog.Logger
}

// Auth configures request authentication.
type Auth struct {
	// Authenticator checks tokens; nil or disabled means an open server.
	Authenticator *auth.Authenticator
	// TokenSource: TokenFromHeader (default), TokenFromCookie or TokenFromBoth.
	// A state-changing request authenticated by the cookie needs an Origin in
	// CORSOrigins or the CSRFHeader; cookie sources refuse CORSOrigins "*".
	TokenSource TokenSource
	// CookieName for cookie sources; default "access_token".
	CookieName string
	// ExcludedPaths skip authentication: exact paths or prefixes ending in "*".
	// nil means ["/health", "/health/ready"] (liveness and readiness probes).
	ExcludedPaths []string
	// Authorization enforces each route's resource:action scope (the route
	// table in routes.go); off, any authenticated caller may call every route.
	Authorization bool
}

// TokenSource says where bearer tokens are read from.
type TokenSource string

// Token sources.
const (
	TokenFromHeader TokenSource = "header"
	TokenFromCookie TokenSource = "cookie"
	TokenFromBoth   TokenSource = "both"
)

// FromFile turns a loaded configuration file into a server Config, building the
// authenticator (and reading the JWKS file).
func FromFile(f config.Config) (Config, error) {
	a, err := f.Auth.Authenticator()
	if err != nil {
		return Config{}, err
	}
	cfg := Config{
		Addr:                 f.Server.Addr(),
		CORSOrigins:          f.Server.CORSOrigins,
		BodyLimit:            int64(f.Server.BodyLimit),
		ReadHeaderTimeout:    f.Server.ReadHeaderTimeout,
		ReadTimeout:          f.Server.ReadTimeout,
		WriteTimeout:         f.Server.WriteTimeout,
		IdleTimeout:          f.Server.IdleTimeout,
		ShutdownTimeout:      f.Server.ShutdownTimeout,
		WorkflowTimeoutSweep: f.Server.WorkflowTimeoutSweep,
		Auth:                 Auth{Authenticator: a},
		UserIsolation:        f.UserIsolation,
	}
	if q := f.Queue; q.Durable {
		cfg.Queue = &queue.Config{MaxConcurrency: q.MaxConcurrency, MaxQueueDepth: q.MaxQueueDepth, MaxAttempts: q.MaxAttempts,
			RetryDelay: config.Seconds(q.RetryDelaySeconds), Timeout: config.Seconds(q.TimeoutSeconds), LockGrace: config.Seconds(q.LockGraceSeconds),
			PollInterval: config.Seconds(q.PollInterval), Retention: config.Seconds(q.RetentionSeconds), DeploymentID: q.DeploymentID}
	} else {
		cfg.BackgroundConcurrency, cfg.BackgroundQueueDepth = q.MaxConcurrency, q.MaxQueueDepth
	}
	if sc := f.Schedules; sc.Enabled {
		cfg.Schedules = &schedule.Config{PollInterval: config.Seconds(sc.PollInterval), CatchUp: schedule.CatchUp(sc.CatchUp),
			MaxCatchUp: sc.MaxCatchUp, MisfireGrace: config.Seconds(sc.MisfireGraceSeconds)}
	}
	if f.MCPServer.Enabled {
		opts, err := f.MCPServer.Options()
		if err != nil {
			return Config{}, err
		}
		cfg.MCP = MCP{Enabled: true, Path: f.MCPServer.Path, Options: opts}
	}
	if j := f.Auth.JWT; j != nil {
		cfg.Auth.TokenSource = TokenSource(j.TokenSource)
		cfg.Auth.CookieName = j.CookieName
		cfg.Auth.ExcludedPaths = j.ExcludedRoutePaths
		cfg.Auth.Authorization = j.Authorization
	}
	return cfg, nil
}

// Server is an AgentOS HTTP server.
type Server struct {
	cfg       Config
	log       *slog.Logger
	router    chi.Router
	startedAt time.Time
	agents    map[string]*agent.Agent
	teams     map[string]*team.Team
	workflows map[string]*workflow.Workflow
	// dbs in first-seen order; dbByID indexes them.
	dbs    []*db.DB
	dbByID map[string]*db.DB
	// control is the control plane's state (issue 17: metrics refresh guards).
	control controlPlane
	// afterRepeatedKey, when set (tests), is called with the first run's
	// id between the enqueue that found a repeated Idempotency-Key and the
	// read of that run.
	afterRepeatedKey atomic.Pointer[func(runID string)]
	// runs tracks runs in flight (cancel route, shutdown, background workers).
	runs *runner
	// cancelTimeout bounds the cancel route's wait (cancelWait; tests shorten it).
	cancelTimeout time.Duration
	// mcp is the MCP endpoint when MCP.Enabled.
	mcp *mcpserver.Server
	// queue runs background runs when Config.Queue is set.
	queue *queue.Queue
	// events are the databases' run event logs (background runs' events,
	// for streaming and resuming); tailCfg tunes their readers.
	events  eventLogs
	tailCfg runlog.TailConfig
	// sched fires cron schedules when Config.Schedules is set.
	sched *schedule.Scheduler
	// stored caches the stored components built for runs (server_components.go).
	stored storedComponents
	// sweepClock is the workflow timeout sweep's clock (tests set it).
	sweepClock func() time.Time
	// mediaLeft are deleted sessions whose media deletion failed
	// (session_delete.go).
	mediaLeft pendingMedia
	// codeModes are Config.CodeModes and the stored components' CodeModes
	// (codemode_sessions.go).
	codeModes codeModes
}

// New validates cfg, fills defaults and builds the router.
func New(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = fmt.Sprintf("%s:%d", config.DefaultHost, config.DefaultPort)
	}
	if cfg.CORSOrigins == nil {
		cfg.CORSOrigins = config.DefaultCORSOrigins()
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = config.DefaultBodyLimit
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if cfg.WorkflowTimeoutSweep == 0 {
		cfg.WorkflowTimeoutSweep = defaultWorkflowTimeoutSweep
	}
	switch cfg.Auth.TokenSource {
	case "":
		cfg.Auth.TokenSource = TokenFromHeader
	case TokenFromHeader, TokenFromCookie, TokenFromBoth:
	default:
		return nil, fmt.Errorf("agentos: token source %q: use header, cookie or both", cfg.Auth.TokenSource)
	}
	if cfg.Auth.Authenticator.Enabled() && cfg.Auth.TokenSource != TokenFromHeader && slices.Contains(cfg.CORSOrigins, "*") {
		// "*" is echoed with credentials: every site could then read and send
		// cookie-authenticated requests, and no Origin check could stop it.
		return nil, errors.New(`agentos: cors origins "*" with a cookie token source lets every website act as the signed-in user; list the allowed origins (server.cors_origins)`)
	}
	if cfg.Auth.CookieName == "" {
		cfg.Auth.CookieName = config.DefaultCookieName
	}
	if cfg.Auth.ExcludedPaths == nil {
		cfg.Auth.ExcludedPaths = []string{"/health", ReadyPath}
	}
	if cfg.UserIsolation && !cfg.Auth.Authenticator.Enabled() {
		return nil, errors.New("agentos: user isolation needs authentication (configure JWT)")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.ID == "" {
		cfg.ID = "agentry"
	}
	if cfg.Name == "" {
		cfg.Name = "Agentry AgentOS"
	}
	s := &Server{cfg: cfg, log: cfg.Logger, startedAt: time.Now(), agents: map[string]*agent.Agent{}, dbByID: map[string]*db.DB{},
		teams: map[string]*team.Team{}, workflows: map[string]*workflow.Workflow{}, runs: newRunner(cfg.BackgroundConcurrency, cfg.BackgroundQueueDepth), cancelTimeout: cancelWait}
	for _, cm := range cfg.CodeModes {
		if cm != nil {
			s.codeModes.add(cm, false)
		}
	}
	addDB := func(d *db.DB) error {
		if d == nil {
			return nil
		}
		if prev, ok := s.dbByID[d.ID]; ok {
			if prev != d {
				return fmt.Errorf("agentos: two databases share db_id %q; give each a distinct id", d.ID)
			}
			return nil
		}
		s.dbByID[d.ID] = d
		s.dbs = append(s.dbs, d)
		return nil
	}
	for _, d := range cfg.DBs {
		if err := addDB(d); err != nil {
			return nil, err
		}
	}
	for i, a := range cfg.Agents {
		if a == nil {
			return nil, fmt.Errorf("agentos: Agents[%d] is nil", i)
		}
		if _, dup := s.agents[a.ID()]; dup {
			return nil, fmt.Errorf("agentos: two agents share id %q", a.ID())
		}
		s.agents[a.ID()] = a
		if err := addDB(a.Config().DB); err != nil {
			return nil, err
		}
	}
	if err := s.addTeamsAndWorkflows(addDB); err != nil {
		return nil, err
	}
	if cfg.MCP.Enabled {
		var err error
		if s.mcp, err = s.newMCP(); err != nil {
			return nil, fmt.Errorf("agentos: mcp_server: %w", err)
		}
	}
	s.router = s.newRouter()
	s.events.retention, s.events.log, s.events.stop = 24*time.Hour, s.log, make(chan struct{})
	if cfg.Queue != nil && cfg.Queue.Retention > 0 {
		s.events.retention = cfg.Queue.Retention
	}
	if err := s.openQueue(context.Background()); err != nil {
		return nil, err
	}
	if err := s.registerQueueMetrics(); err != nil {
		return nil, err
	}
	if s.queue != nil {
		if err := s.queue.Start(context.Background()); err != nil {
			return nil, fmt.Errorf("agentos: durable queue: %w", err)
		}
	}
	if err := s.openScheduler(); err != nil {
		return nil, errors.Join(err, s.Close(context.Background()))
	}
	return s, nil
}

// Close stops the durable queue (when there is one): it claims no more
// jobs and waits for the running ones until ctx ends; those still running
// then are left to recovery. It also waits, until ctx ends, for the
// background metrics refreshes. Serve calls it when it shuts down.
func (s *Server) Close(ctx context.Context) error {
	s.events.close()
	s.codeModes.closeOwned()
	if s.sched != nil {
		s.sched.Stop()
	}
	var err error
	if s.queue != nil {
		err = s.queue.Stop(ctx)
	}
	refreshed := make(chan struct{})
	go func() {
		s.control.background.Wait()
		close(refreshed)
	}()
	select {
	case <-refreshed:
	case <-ctx.Done():
	}
	return err
}

// newRouter installs the middleware chain, outermost first: request id, access
// log, panic recovery, CORS (preflights end here), body limit, authentication,
// path and query string check.
func (s *Server) newRouter() chi.Router {
	r := chi.NewRouter()
	r.Use(requestIDs, accessLog(s.log))
	if obs := s.observe(); obs != nil {
		r.Use(obs)
	}
	r.Use(recoverPanics(s.log), cors(s.cfg.CORSOrigins), limitBody(s.cfg.BodyLimit), s.authenticate, strictURL)
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) { writeError(w, http.StatusNotFound, "Not Found") })
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, http.StatusMethodNotAllowed, "Method Not Allowed")
	})
	s.routes(r)
	return r
}

// Handler returns the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.router }

// Serve serves on ln until ctx is cancelled, then shuts down gracefully: it
// stops accepting, lets in-flight requests and runs (background ones too)
// finish for up to ShutdownTimeout, then cancels the runs still going, waits
// for them to be stored as CANCELLED and closes the remaining connections.
// Background runs of the durable queue are stopped instead and left RUNNING
// for recovery.
// Serving with authentication off on a non-loopback address logs a warning.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if addr, ok := ln.Addr().(*net.TCPAddr); ok && !addr.IP.IsLoopback() && !s.cfg.Auth.Authenticator.Enabled() {
		s.log.Warn("agentos: serving without authentication on a non-loopback address: anyone who can reach it "+
			"can run agents and read every session; set OS_SECURITY_KEY or configure auth.jwt",
			"addr", addr.String())
	}
	hs := &http.Server{
		Handler:           s.router,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	sctx, stopSweep := context.WithCancel(ctx)
	waitTimeouts := s.startWorkflowTimeouts(sctx)
	defer func() {
		stopSweep()
		waitTimeouts()
		s.stopWorkflowTimeouts()
	}()
	if s.sched != nil {
		s.sched.Start(ctx)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("agentos shutting down", "timeout", s.cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- hs.Shutdown(sctx) }()
	// Background runs hold no connection: wait for them as well.
	qdone := make(chan error, 1)
	go func() { qdone <- s.Close(sctx) }()
	queueStopped := false
	defer func() {
		if !queueStopped {
			<-qdone
		}
	}()
	s.runs.drain()
	idle := s.runs.wait(sctx)
	err := <-shut
	if !idle || errors.Is(err, context.DeadlineExceeded) {
		// Reaching the timeout is the documented path, not a failure.
		if errors.Is(err, context.DeadlineExceeded) {
			err = nil
		}
		s.log.Warn("agentos: shutdown timeout reached; cancelling runs still in flight")
		if s.queue != nil {
			// The durable queue stops its runs first, as stopped rather than
			// cancelled: they stay RUNNING with their jobs, and recovery
			// resumes them (a restarted single node at once, another
			// replica after lock_grace). Its stop error is the timeout.
			<-qdone
			queueStopped = true
		}
		s.runs.stop(errServerShutdown)
		// The agents store cancelled runs with a context of their own; give
		// them a bounded moment to do so before connections are closed.
		wctx, wcancel := context.WithTimeout(context.Background(), cancelWait)
		if !s.runs.wait(wctx) {
			s.log.Error("agentos: runs did not stop after cancellation; they may stay RUNNING in the database")
		}
		wcancel()
		err = errors.Join(err, hs.Close())
	}
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}

// ListenAndServe listens on cfg.Addr and calls Serve.
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("agentos: %w", err)
	}
	s.log.Info("agentos listening", "addr", ln.Addr().String())
	return s.Serve(ctx, ln)
}
