package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/knowledge"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/offload"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
	"github.com/agentryhq/agentry/tool/netguard"
	"github.com/google/uuid"
	"gopkg.in/yaml.v3"
)

// DefaultNumHistoryRuns is the number of past runs added to the context when
// AddHistoryToContext is set and NumHistoryRuns is zero (Agno's default).
const DefaultNumHistoryRuns = 3

// Instructions are the agent's instructions. In JSON and YAML they may be a
// single string or a list of strings, as in Agno.
type Instructions []string

// UnmarshalJSON accepts a string or a list of strings.
func (in *Instructions) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*in = Instructions{s}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return fmt.Errorf("agent: instructions must be a string or a list of strings: %w", err)
	}
	*in = l
	return nil
}

// UnmarshalYAML accepts a string or a list of strings.
func (in *Instructions) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*in = Instructions{n.Value}
		return nil
	}
	var l []string
	if err := n.Decode(&l); err != nil {
		return fmt.Errorf("agent: instructions must be a string or a list of strings: %w", err)
	}
	*in = l
	return nil
}

// Config configures an Agent. Field names follow Agno's agent parameters; zero
// values take the documented defaults. Only Model is required.
type Config struct {
	// ID identifies the agent (agent_id in sessions and runs). Default: Name
	// lower-cased with spaces as dashes; with no Name, a random UUID chosen on
	// first use (Agno's behaviour) — set ID or Name for stable storage.
	ID          string
	Name        string
	Description string

	Model model.Model
	// ModelRetry, when set, wraps Model (and ReasoningModel and the fallback
	// models) in model.WithRetry.
	ModelRetry *model.RetryConfig
	// FallbackModels are tried in order when Model fails before answering with
	// a rate limit, server error, context-length error or the like (Agno's
	// fallback_models, i.e. FallbackConfig.OnError). The run's model and
	// model_provider, and metrics.details, name the model that answered.
	FallbackModels []model.Model
	// FallbackConfig picks fallbacks by error kind; it wins over
	// FallbackModels when both are set, as in Agno.
	FallbackConfig *model.FallbackConfig
	Tools          []tool.Tool
	// ToolProviders supply tools found at run time (an MCP server's): each
	// run asks them for their current tools, after Tools. A provider error
	// stops the run before it starts. Close closes the providers that are
	// io.Closers.
	ToolProviders []ToolProvider
	// ToolChoice is passed to the model: "", "auto", "none", "required" or a name.
	ToolChoice string
	// ToolCallLimit caps the tool calls executed in one run (0 = no limit). Past
	// the limit, calls are answered with a tool error and the model is asked once
	// more, with tool_choice "none", to answer; whatever it answers ends the run
	// (COMPLETED), as Agno does.
	ToolCallLimit int

	Instructions Instructions
	// SystemMessage, when set, replaces the system message built from
	// Description, Instructions, ExpectedOutput, AdditionalContext, Markdown and
	// AddDatetimeToContext.
	SystemMessage        string
	ExpectedOutput       string
	AdditionalContext    string
	Markdown             bool
	AddDatetimeToContext bool

	// DB stores sessions and runs; nil means nothing is persisted.
	DB *db.DB
	// SessionID and UserID are the defaults for runs without WithSessionID or
	// WithUserID. An empty session id gives each run a new session.
	SessionID string
	UserID    string
	// SessionState is the initial state of new sessions. A stored state is
	// read back as encoding/json reads JSON into interface values (numbers
	// are float64), except that a number float64 cannot give back (an
	// integer beyond 2^53, such as a 64-bit id another program stored) is a
	// json.Number holding its digits, so that it is stored again unchanged.
	SessionState map[string]any
	// AddHistoryToContext adds the last NumHistoryRuns completed runs of the
	// session (one bounded query) to the model's context.
	AddHistoryToContext bool
	NumHistoryRuns      int

	// OutputSchema is a JSON Schema for structured output (see OutputSchemaFor).
	// The answer is parsed and validated; Content becomes the decoded value.
	OutputSchema json.RawMessage
	// OutputSchemaName names the schema for providers; default "output".
	OutputSchemaName string
	// StrictOutput asks providers that can enforce the output schema
	// (OpenAI's strict structured outputs, as Agno's strict_output) to do
	// so: the schema sent lists every property as required, takes no
	// others, and lets the optional ones be null (tool.StrictSchema); the
	// answer is validated against the schema with its own required lists
	// (DecodeContent reads a null as the field's zero value). It applies to
	// a per-call WithOutputSchema too. A schema with a part strict mode
	// cannot describe (a map, a property taking any value) is refused by
	// New, or fails the run for a per-call one.
	StrictOutput bool

	// ReasoningModel, when set, reasons first; its reasoning is recorded and
	// given to Model as context.
	ReasoningModel model.Model

	// StoreEvents records the run's events (without content deltas) in the
	// stored run's "events".
	StoreEvents bool
	// Metadata is merged into every run's metadata over the run's own
	// (WithMetadata): the agent's value wins a conflict, as in Agno.
	Metadata map[string]any

	// Component is the identity the agent's runs, sessions and events are
	// stamped with. Zero means the agent's own: {agent, ID, Name}. Whoever
	// composes the agent into something else sets it, with ID and Name left
	// empty: a team gives its leader the team's identity, so the leader's runs
	// are team runs (team_id/team_name, a team session with team_data,
	// TeamRunStarted, …, history of the team's own runs). The model loop is
	// the same whatever the identity.
	Component run.Component
	// BeforeStore, when set, is called with the run's context and its output
	// just before the finished (or paused) run is stored, and, for a
	// streamed run that completes, before its completed event is built (DB
	// or none): it may add to the output (a team adds the member runs it
	// delegated to, and its task list to session_state), and must give the
	// same output when called again.
	BeforeStore func(ctx context.Context, out *run.Output)
	// MemberRuns, when set, returns the member runs (stored JSON) of the run
	// whose output is out, whether or not they are stored with it: a team
	// gives the runs it delegated to, whose tokens count in the session's
	// metrics (session_data.session_metrics) as Agno counts them. Without
	// it the run's MemberResponses are counted.
	MemberRuns func(ctx context.Context, out *run.Output) []json.RawMessage
	// Iterate, when set, makes each run iterate until Iterate.Completed says
	// it is done (see Iteration); a team in tasks mode sets it.
	Iterate *Iteration

	// PreHooks run in order on the input before the model sees it; PostHooks
	// on the output before the run completes. Either may change what it is
	// given or reject it (InputCheckError, OutputCheckError). Package
	// agent/guardrail has hooks for PII, prompt injection and moderation.
	PreHooks  []PreHook
	PostHooks []PostHook
	// InputSchema is a JSON Schema the run's input must match (Agno's
	// input_schema): text input is decoded as JSON first. A mismatch ends
	// the run in ERROR with an InputCheckError (trigger validation_failed).
	InputSchema json.RawMessage
	// ParserModel, when set, turns the main model's free-text answer into
	// the run's output schema (the main model is then not given the schema);
	// ParserModelPrompt replaces its default system message.
	ParserModel       model.Model
	ParserModelPrompt string
	// OutputModel, when set, writes the final answer from the conversation
	// the main model had (tool results included), whose own deltas stream as
	// RunIntermediateContent; OutputModelPrompt replaces the system message
	// it is given.
	OutputModel       model.Model
	OutputModelPrompt string
	// ToolHooks wrap every tool call (see ToolHook), the first outermost.
	ToolHooks []ToolHook
	// CacheResults serves a tool's successful result again for the same
	// arguments and user for CacheTTL (default DefaultToolCacheTTL), in
	// memory, shared by the agent's runs. Set it only for tools without side
	// effects: a cached call does not run.
	CacheResults bool
	CacheTTL     time.Duration

	// Timezone is the IANA zone of AddDatetimeToContext's time (Agno's
	// timezone_identifier, e.g. "Europe/Paris"); default the local zone.
	Timezone string
	// AddLocationToContext adds Location to the system message. Agno looks
	// the location up from the machine's IP address; Agentry makes no such
	// request, so Location is required with it.
	AddLocationToContext bool
	Location             string
	// AddNameToContext adds "Your name is: Name." to the system message.
	AddNameToContext bool
	// Retries re-asks the model up to Retries times when a request fails
	// (any error, unlike ModelRetry's rate limits and server errors), waiting
	// DelayBetweenRetries (zero: DefaultDelayBetweenRetries, 1s as Agno;
	// NoDelayBetweenRetries: none), doubled after each attempt with
	// ExponentialBackoff.
	Retries             int
	DelayBetweenRetries time.Duration
	ExponentialBackoff  bool
	// DebugMode writes a human-readable trace of each run (its events, and
	// the messages of its first model request) to DebugWriter, default
	// os.Stderr.
	DebugMode   bool
	DebugWriter io.Writer
	// OffloadToolResults, when set, stores tool results longer than its
	// threshold (default 16,000 chars) in DB (agno_fs, indexed in
	// agno_tool_results) and gives the model an envelope with a preview,
	// plus the read_result and search_result tools (package offload). It
	// needs DB. Nil (the default) offloads nothing.
	OffloadToolResults *offload.Config

	// MediaStorage, when set, receives the run's images, audio, video and
	// files when the run is stored (content-hashed, once per session); the
	// stored run keeps media_reference objects instead of the bytes, and
	// history is read back from it before a model call. Nil stores media
	// inline.
	MediaStorage media.Storage

	// MemoryConfig: user memories, session summaries and past-session
	// search (Agno's parameter names, promoted: Config.UpdateMemoryOnRun, …).
	MemoryConfig

	// RemoteMedia says which non-public hosts media given by URL may be
	// fetched from, when a model needs their bytes (it does not take that
	// kind by URL). The zero value allows public addresses only: loopback,
	// private, link-local and metadata addresses are refused (SSRF).
	RemoteMedia netguard.Config

	// Knowledge is the agent's knowledge base (RAG). SearchKnowledge gives
	// the model the search_knowledge_base tool; AddKnowledgeToContext
	// searches with the user's input before the run and adds the hits to
	// the user message. Both record what was found in the run's
	// references. KnowledgeFilters restrict every search by metadata. A
	// search sees the run user's content and shared content only.
	Knowledge             *knowledge.Knowledge
	SearchKnowledge       bool
	AddKnowledgeToContext bool
	KnowledgeFilters      map[string]any
}

// ToolProvider lists tools at the start of each run. It must be safe for
// concurrent use and should be cheap when its tools did not change.
type ToolProvider interface {
	Tools(ctx context.Context) ([]tool.Tool, error)
}

// Close releases the agent's tool providers (MCP connections and server
// processes). The agent must not run afterwards.
func (a *Agent) Close() error {
	var errs []error
	for _, tp := range a.conf().ToolProviders {
		if c, ok := tp.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// Agent runs a model with tools. It is safe for concurrent use: any number of
// runs, in any sessions, may execute at once.
type Agent struct {
	// An agent keeps its Config in one of two forms. When every field New
	// was given is one of compactConfig's (a model, tools, instructions, a
	// name, a database: most agents), only those are kept and the whole
	// Config is built on first use; otherwise full holds the whole Config
	// from New on. A 928-byte Config copied into every Agent was most of
	// the cost of building one (issue 12, construction row). Read the
	// configuration through conf, never small.
	small    compactConfig
	full     *Config
	fullOnce sync.Once

	once sync.Once
	p    *prepared
	// compiled by New from Controls and OutputSchema
	inputSchema  *inputSchema
	outputSchema *compiledSchema
	timezone     *time.Location
	// off offloads oversized tool results (Config.OffloadToolResults).
	off *offload.Offloader
	// mem is the memory machinery of Config.MemoryConfig; nil when off.
	mem *memoryParts
	// remote guards fetches of media given by URL (Config.RemoteMedia),
	// built on first use (remoteGuard): most agents never fetch media, and
	// the guard is half of a team's construction cost.
	remoteOnce sync.Once
	remote     *netguard.Guard
}

// compactConfig is the part of a Config most agents set; see Agent.
type compactConfig struct {
	ID, Name, Description string
	Model                 model.Model
	Tools                 []tool.Tool
	Instructions          Instructions
	DB                    *db.DB
	NumHistoryRuns        int
	AddHistoryToContext   bool
	Markdown              bool
}

// compact returns c's compactConfig and whether c sets no other field.
func compact(c *Config) (compactConfig, bool) {
	k := compactConfig{
		ID: c.ID, Name: c.Name, Description: c.Description, Model: c.Model, Tools: c.Tools,
		Instructions: c.Instructions, DB: c.DB, NumHistoryRuns: c.NumHistoryRuns,
		AddHistoryToContext: c.AddHistoryToContext, Markdown: c.Markdown,
	}
	rest := *c
	rest.ID, rest.Name, rest.Description = "", "", ""
	rest.Model, rest.Tools, rest.Instructions, rest.DB = nil, nil, nil, nil
	rest.NumHistoryRuns, rest.AddHistoryToContext, rest.Markdown = 0, false, false
	// Every field's zero value is all zero bytes, so a Config whose bytes
	// are all zero sets nothing. Config is not comparable (it holds slices
	// and funcs), and a field-by-field check would silently drop a field
	// added later; this cannot. Non-zero padding could only send a Config
	// to the full form, which loses nothing.
	return k, *(*[unsafe.Sizeof(Config{})]byte)(unsafe.Pointer(&rest)) == [unsafe.Sizeof(Config{})]byte{}
}

// conf returns the agent's whole configuration (after New's defaults). The
// caller must not modify it.
func (a *Agent) conf() *Config {
	a.fullOnce.Do(a.expand)
	return a.full
}

// expand builds full from small when New kept only small.
func (a *Agent) expand() {
	if a.full != nil {
		return
	}
	k := &a.small
	a.full = &Config{
		ID: k.ID, Name: k.Name, Description: k.Description, Model: k.Model, Tools: k.Tools,
		Instructions: k.Instructions, DB: k.DB, NumHistoryRuns: k.NumHistoryRuns,
		AddHistoryToContext: k.AddHistoryToContext, Markdown: k.Markdown,
	}
}

// remoteGuard returns the guard of Config.RemoteMedia, building it on first
// use. A configuration that could fail was built and checked by New.
func (a *Agent) remoteGuard() *netguard.Guard {
	a.remoteOnce.Do(func() { a.remote = netguard.MustNew(a.conf().RemoteMedia) })
	return a.remote
}

// WrapModels replaces every model cfg names (Model, ReasoningModel,
// ParserModel, OutputModel, FallbackModels and FallbackConfig's lists) with
// wrap's wrapping of it, for instrumentation before New. Lists are new ones:
// a list two configurations share is not wrapped twice through them. A nil
// model stays nil (New refuses a nil fallback).
func (cfg *Config) WrapModels(wrap func(model.Model) model.Model) {
	for _, p := range []*model.Model{&cfg.Model, &cfg.ReasoningModel, &cfg.ParserModel, &cfg.OutputModel} {
		if *p != nil {
			*p = wrap(*p)
		}
	}
	list := func(ms []model.Model) []model.Model {
		if len(ms) == 0 {
			return ms
		}
		out := make([]model.Model, len(ms))
		for i, m := range ms {
			if m != nil {
				m = wrap(m)
			}
			out[i] = m
		}
		return out
	}
	cfg.FallbackModels = list(cfg.FallbackModels)
	if fc := cfg.FallbackConfig; fc != nil {
		cfg.FallbackConfig = &model.FallbackConfig{OnError: list(fc.OnError), OnRateLimit: list(fc.OnRateLimit), OnContextOverflow: list(fc.OnContextOverflow)}
	}
}

// New validates cfg and returns an Agent. It does no I/O and compiles nothing:
// tool specs, the system message and schemas are prepared on the first run.
func New(cfg Config) (*Agent, error) {
	if cfg.Model == nil {
		return nil, errors.New("agent: Config.Model is required (e.g. scripted.Reply(\"hi\") in tests)")
	}
	for i, m := range cfg.FallbackModels {
		if m == nil {
			return nil, fmt.Errorf("agent: FallbackModels[%d] is nil", i)
		}
	}
	if fc := cfg.FallbackConfig; fc != nil {
		for _, m := range append(append(append([]model.Model(nil), fc.OnError...), fc.OnRateLimit...), fc.OnContextOverflow...) {
			if m == nil {
				return nil, errors.New("agent: FallbackConfig holds a nil model")
			}
		}
	}
	if err := checkKnowledgeConfig(&cfg); err != nil {
		return nil, err
	}
	if cfg.NumHistoryRuns < 0 {
		return nil, fmt.Errorf("agent: NumHistoryRuns must be >= 0, got %d", cfg.NumHistoryRuns)
	}
	if cfg.ToolCallLimit < 0 {
		return nil, fmt.Errorf("agent: ToolCallLimit must be >= 0, got %d", cfg.ToolCallLimit)
	}
	var outSchema *compiledSchema
	if len(cfg.OutputSchema) > 0 {
		var err error
		if outSchema, err = compileSchema(cfg.OutputSchema, cfg.OutputSchemaName, "OutputSchema", cfg.StrictOutput); err != nil {
			return nil, err
		}
	}
	for i, tp := range cfg.ToolProviders {
		if tp == nil {
			return nil, fmt.Errorf("agent: ToolProviders[%d] is nil", i)
		}
	}
	for i, t := range cfg.Tools {
		if t == nil {
			return nil, fmt.Errorf("agent: Tools[%d] is nil", i)
		}
		name := t.Definition().Name
		if name == "" {
			return nil, fmt.Errorf("agent: Tools[%d] has no name", i)
		}
		for _, u := range cfg.Tools[:i] {
			if u.Definition().Name == name {
				return nil, fmt.Errorf("agent: two tools are named %q; tool names must be unique", name)
			}
		}
	}
	if c := &cfg.Component; c.Type != "" {
		if cfg.ID != "" || cfg.Name != "" {
			return nil, errors.New("agent: set Config.Component or ID and Name, not both (the component carries the id and name)")
		}
		c.ID = DefaultID(c.ID, c.Name)
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("agent: Component: %w", err)
		}
	}
	if cfg.NumHistoryRuns == 0 {
		cfg.NumHistoryRuns = DefaultNumHistoryRuns
	}
	inSchema, tz, err := checkControls(&cfg)
	if err != nil {
		return nil, err
	}
	off, err := newOffloader(&cfg)
	if err != nil {
		return nil, err
	}
	a := &Agent{inputSchema: inSchema, outputSchema: outSchema, timezone: tz, off: off}
	if k, ok := compact(&cfg); ok {
		a.small = k
	} else {
		full := new(Config)
		*full = cfg
		a.full = full
	}
	if rm := cfg.RemoteMedia; len(rm.AllowNetworks) > 0 || len(rm.AllowHosts) > 0 || len(rm.Ports) > 0 {
		// Only an allow list can be wrong: refuse it here, not at the
		// first fetch.
		g, err := netguard.New(rm)
		if err != nil {
			return nil, fmt.Errorf("agent: RemoteMedia: %w", err)
		}
		a.remoteOnce.Do(func() { a.remote = g })
	}
	if a.mem, err = newMemoryParts(&cfg, a); err != nil {
		return nil, err
	}
	return a, nil
}

// DefaultID is the id an agent, team or workflow gets: id when set, else name
// lower-cased with spaces as dashes, else a random UUID.
func DefaultID(id, name string) string {
	switch {
	case id != "":
		return id
	case name != "":
		return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(name)), " ", "-")
	default:
		return uuid.NewString()
	}
}

// ID returns the agent id (agent_id; the component's id when Config.Component is set).
func (a *Agent) ID() string { return a.prep().comp.ID }

// Name returns the agent name (the component's name when Config.Component is set).
func (a *Agent) Name() string { return a.prep().comp.Name }

// Component returns the identity the agent's runs are stamped with.
func (a *Agent) Component() run.Component { return a.prep().comp }

// ComponentData returns the agent_data its runs write to their session's
// row ({agent_id, name, model}). A session row created for one of its runs
// before the run starts (a background run's, at enqueue) carries it, so
// that the run's end need not rewrite an otherwise unchanged row. The
// caller must not modify it.
func (a *Agent) ComponentData() json.RawMessage { return a.prep().agentData }

// Config returns a copy of the configuration the agent was built with (after
// defaults).
func (a *Agent) Config() Config { return *a.conf() }

// ModelInfo names the agent's model (AgentOS's model {name, model, provider}).
func (a *Agent) ModelInfo() model.Info { return a.prep().info }

// Metadata returns Config.Metadata, merged into every run's metadata.
func (a *Agent) Metadata() map[string]any { return a.conf().Metadata }

// DB returns the agent's database, nil when runs are not persisted.
func (a *Agent) DB() *db.DB { return a.conf().DB }

// Tools returns the tool specs sent to the model.
func (a *Agent) Tools() []model.ToolSpec { return a.prep().specs }
