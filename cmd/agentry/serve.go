package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"github.com/agentryhq/agentry/codemode"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/offload"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos"
	"github.com/agentryhq/agentry/agentos/config"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/metrics"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/trace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// demoScript is the model of the demo agent served when no agent is configured.
//
//go:embed demo.script.yaml
var demoScript []byte

// DemoAgentID is the id of the built-in demo agent.
const demoAgentID = "echo"

// offloadSweepInterval is how often serve deletes expired offloaded results.
const offloadSweepInterval = 5 * time.Minute

// defaultDataDir holds local media and offloaded results (created at start).
const defaultDataDir = "./agentry-data"

type serveFlags struct {
	prometheus bool
	host       string
	port       int
	dsn        string
	configFile string
	dataDir    string
	logLevel   string
	logFormat  string
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve agents, teams and workflows over the AgentOS HTTP API",
		Long: `Serve agents, teams and workflows over the AgentOS HTTP/SSE API (the routes
Agno's AgentOS clients use).

With no flags: SQLite ./agentry.db, data under ./agentry-data/, listening on
127.0.0.1:7777, serving a demo agent "echo" (a scripted model: no API key).
--config FILE declares agents, teams (members are agent ids), workflows (steps
name an agent or a team), auth and limits; it may also be one agent, the file
'agentry run --config' reads. In the repository, examples/offline.yaml serves
scripted agents, a team and a workflow with no API key, and examples/agentos.yaml
shows every setting. Environment variables (AGENTRY_HOST, AGENTRY_PORT,
AGENTRY_DB, OS_SECURITY_KEY, …) override the file, and flags override both.

On SIGINT/SIGTERM the server stops accepting, lets in-flight runs finish for
server.shutdown_timeout (30s), then cancels the rest, which are stored CANCELLED.
Background runs execute in this process unless the config says
queue: {durable: true}: then each is a job in the database, resumed after a crash
(at once on a restarted SQLite server, after lock_grace_seconds on another
Postgres replica). Without it a killed process leaves them PENDING or RUNNING
(cancel them through POST /agents/{id}/runs/{run_id}/cancel).`,
		Example: `  agentry serve
  agentry serve --config examples/offline.yaml
  curl -s localhost:7777/agents/echo/runs -F message=hi -F stream=false
  curl -N localhost:7777/agents/echo/runs -d message=hi
  agentry serve --config examples/agentos.yaml --db postgres://user:pass@host/db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.host, "host", config.DefaultHost, "address to listen on")
	fl.IntVar(&f.port, "port", config.DefaultPort, "port to listen on (0 picks a free port)")
	fl.StringVar(&f.dsn, "db", config.DefaultDSN, dbFlagHelp)
	fl.StringVarP(&f.configFile, "config", "c", "", "AgentOS configuration file (YAML)")
	fl.StringVar(&f.dataDir, "data-dir", defaultDataDir, "directory for local media and offloaded results")
	fl.BoolVar(&f.prometheus, "prometheus", false, "serve Prometheus metrics at /prometheus (admin scope when auth is on)")
	fl.StringVar(&f.logLevel, "log-level", "info", "debug, info (one access line per request), warn or error")
	fl.StringVar(&f.logFormat, "log-format", "text", "text or json")
	return cmd
}

func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use text or json", format)
}

// storeOptions are the options serve opens the configured database with.
func storeOptions(c config.Config) dsn.Options {
	return dsn.Options{ID: c.DB.ID, QueryTimeout: c.DB.QueryTimeout, SQLiteExclusive: c.DB.SQLiteExclusive}
}

func serve(cmd *cobra.Command, f serveFlags) error {
	ctx := cmd.Context()
	log, err := newLogger(cmd.ErrOrStderr(), f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	file, err := config.Load(f.configFile, nil)
	if err != nil {
		return err
	}
	flags := cmd.Flags()
	if flags.Changed("host") {
		file.Server.Host = f.host
	}
	if flags.Changed("port") {
		file.Server.Port = f.port
	}
	if flags.Changed("db") {
		file.DB.DSN = f.dsn
	}
	if err := file.Validate(); err != nil {
		return err
	}
	cfg, err := agentos.FromFile(file)
	if err != nil {
		return err
	}
	// Bind before touching the database or the disk: a port in use must
	// not leave a new database file or data directory behind.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.Addr, err)
	}
	defer ln.Close() // Serve closes it too; this covers the failures below
	if err := os.MkdirAll(f.dataDir, 0o750); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	store, err := openStore(ctx, file.DB.DSN, storeOptions(file))
	if err != nil {
		return err
	}
	defer store.Close()
	// Offloaded tool results past their ttl are deleted in the background.
	sweeper, err := offload.New(store, offload.Config{})
	if err != nil {
		return err
	}
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	go sweeper.SweepEvery(sweepCtx, offloadSweepInterval, func(err error) { log.Warn("offload sweep", "err", err) })
	mediaStore, err := file.MediaStorage.Open(ctx, f.dataDir)
	if err != nil {
		return err
	}
	kb, closeKB, err := config.OpenKnowledge(ctx, file.Knowledge, store, f.dataDir, log)
	if err != nil {
		return err
	}
	defer func() {
		if err := closeKB(); err != nil {
			log.Warn("closing the knowledge base", "err", err)
		}
	}()
	// Tracing is on when the standard OTEL_* variables ask for it, or when
	// tracing.store keeps traces in the database for /traces.
	var procs []sdktrace.SpanProcessor
	var traceStore *trace.Store
	if file.Tracing.Store {
		if traceStore, err = trace.NewStore(trace.StoreConfig{DB: store, Retention: file.Tracing.Retention(),
			QueueSize: file.Tracing.QueueSize, Logger: log}); err != nil {
			return fmt.Errorf("tracing.store: %w", err)
		}
		procs = append(procs, traceStore)
	}
	tp, stopTracing, err := trace.FromEnv(ctx, procs...)
	if err != nil {
		return err
	}
	defer func() {
		// Bounded as the runs' wait is: a collector that accepts and never
		// answers must not hold the exit for the exporter's retries.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), file.Server.ShutdownTimeout)
		defer cancel()
		stopTracing(sctx)
	}()
	// One content policy for every span: what it leaves out reaches neither
	// the stored traces nor the OTLP collector.
	tp = trace.WithContent(tp, trace.Content{Omit: file.Tracing.ContentOmitted(), MaxBytes: file.Tracing.MaxContentBytes})
	var prom *metrics.Metrics
	if f.prometheus {
		prom = metrics.New()
		cfg.Telemetry.Metrics = prom
		if traceStore != nil {
			if err := prom.SetTraceStore(traceStore.Written, traceStore.Dropped, traceStore.Failed); err != nil {
				return err
			}
		}
	}
	var instrument func(*agent.Config)
	if tp != nil || prom != nil {
		cfg.Telemetry.TracerProvider = tp
		instrument = func(c *agent.Config) {
			prom.Instrument(c)
			trace.Instrument(c, tp)
		}
	}
	// The configured agents' and teams' CodeModes: the server forgets a
	// deleted session's interpreters and saved states in them.
	var codeModes []*codemode.CodeMode
	onCodeMode := func(cm *codemode.CodeMode) { codeModes = append(codeModes, cm) }
	defer func() {
		for _, cm := range codeModes {
			_ = cm.Close()
		}
	}()
	agents, err := buildAgents(ctx, file, store, mediaStore, f.dataDir, instrument, kb, onCodeMode)
	if err != nil {
		return err
	}
	// MCP toolkits hold connections and server processes: end them on exit.
	defer func() {
		for _, a := range agents {
			if err := a.Close(); err != nil {
				log.Warn("closing agent", "agent", a.ID(), "err", err)
			}
		}
	}()
	teams, workflows, err := file.BuildTeamsAndWorkflows(store, agents, config.BuildOptions{MediaStorage: mediaStore, Knowledge: kb, OnCodeMode: onCodeMode,
		OpenMedia: func(m *config.MediaStorage) (media.Storage, error) { return m.Open(ctx, f.dataDir) }})
	if err != nil {
		return err
	}
	cfg.Version = strings.TrimPrefix(agentryVersion(), "v")
	cfg.Agents = agents
	cfg.Teams, cfg.Workflows = teams, workflows
	cfg.CodeModes = codeModes
	cfg.DBs = []*db.DB{store}
	cfg.Knowledge = []*knowledge.Knowledge{kb}
	cfg.Logger = log
	cfg.MediaStorage = mediaStore
	srv, err := agentos.New(cfg)
	if err != nil {
		return err
	}
	ids := make([]string, len(agents))
	for i, a := range agents {
		ids[i] = a.ID()
	}
	log.Info("agentry serve", "db", store.ID, "dialect", store.Driver().Dialect(), "agents", strings.Join(ids, ","),
		"teams", len(teams), "workflows", len(workflows), "data_dir", f.dataDir)
	log.Info("agentos listening", "addr", ln.Addr().String())
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	log.Info("agentos stopped")
	return nil
}

// buildAgents builds the configured agents on store, or the demo agent when
// the configuration declares none.
func buildAgents(ctx context.Context, file config.Config, store *db.DB, mediaStore media.Storage, dataDir string, instrument func(*agent.Config), kb *knowledge.Knowledge, onCodeMode func(*codemode.CodeMode)) ([]*agent.Agent, error) {
	if len(file.Agents) == 0 {
		m, err := scripted.Parse(demoScript, false)
		if err != nil {
			return nil, fmt.Errorf("demo agent: %w", err)
		}
		demo := agent.Config{ID: demoAgentID, Name: "Echo", Model: m, DB: store, MediaStorage: mediaStore,
			Description: "Built-in demo agent: a scripted model that greets (no API key needed)."}
		if instrument != nil {
			instrument(&demo)
		}
		a, err := agent.New(demo)
		if err != nil {
			return nil, err
		}
		return []*agent.Agent{a}, nil
	}
	var out []*agent.Agent
	var errs []error
	for _, decl := range file.Agents {
		// serve offloads big tool results unless the file turns it off.
		on := file.OffloadFor(decl, true)
		decl.OffloadToolResults = &offload.Setting{Set: true, Enabled: on != nil}
		if on != nil {
			decl.OffloadToolResults.Config = *on
		}
		ms := mediaStore
		if decl.MediaStorage != nil {
			var err error
			if ms, err = decl.MediaStorage.Open(ctx, dataDir); err != nil {
				errs = append(errs, fmt.Errorf("agent %s: %w", decl.ID, err))
				continue
			}
		}
		a, err := decl.BuildWith(store, config.BuildOptions{MediaStorage: ms, Instrument: instrument, Knowledge: kb, OnCodeMode: onCodeMode})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, a)
	}
	return out, errors.Join(errs...)
}
