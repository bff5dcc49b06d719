package config

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentryhq/agentry/offload"
	"gopkg.in/yaml.v3"
)

// Config is the whole file. Default returns the zero-flag configuration.
type Config struct {
	Server Server `yaml:"server"`
	DB     DB     `yaml:"db"`
	Auth   Auth   `yaml:"auth"`
	// UserIsolation makes a non-admin caller's user id (the JWT's user id claim)
	// the user_id of every read and write. Requires auth.jwt.
	UserIsolation bool       `yaml:"user_isolation"`
	Agents        []Agent    `yaml:"agents"`
	Teams         []Team     `yaml:"teams"`
	Workflows     []Workflow `yaml:"workflows"`
	MCPServer     MCPServer  `yaml:"mcp_server"`
	// OffloadToolResults is the server-wide default of the agents'
	// offload_tool_results (true, false or a map of threshold_chars,
	// preview_lines, preview_chars, ttl). `agentry serve` offloads when
	// it is absent; an agent's own setting wins.
	OffloadToolResults *offload.Setting `yaml:"offload_tool_results"`
	// MediaStorage is where the agents' media go when runs are stored
	// (type local, s3 or none); absent, serve uses DATA_DIR/media.
	MediaStorage *MediaStorage `yaml:"media_storage"`
	// Queue configures background runs (see Queue).
	Queue Queue `yaml:"queue"`
	// Schedules configures the cron scheduler (see Schedules).
	Schedules Schedules `yaml:"schedules"`
	// Knowledge is the server's knowledge base (the /knowledge routes and
	// agents with knowledge: true); see Knowledge.
	Knowledge *Knowledge `yaml:"knowledge"`
	// Tracing keeps traces in the database for the /traces routes (see
	// Tracing).
	Tracing Tracing `yaml:"tracing"`

	// agentFile: the file was one agent (the shape of an agents: entry).
	agentFile bool
}

// Server holds the listener and HTTP limits.
type Server struct {
	// Host defaults to 127.0.0.1; Port to 7777 (0 picks a free port).
	Host string `yaml:"host"`
	Port int    `yaml:"port"`
	// CORSOrigins are the allowed browser origins; default http://localhost:3000
	// and http://127.0.0.1:3000 (DefaultCORSOrigins).
	// "*" allows any origin (echoed back, since credentials are allowed).
	CORSOrigins []string `yaml:"cors_origins"`
	// BodyLimit caps request bodies (e.g. 33554432, "32MiB", "10MB"); default 32 MiB.
	BodyLimit ByteSize `yaml:"body_limit"`
	// Timeouts as Go durations ("10s"). WriteTimeout defaults to 0 (none) because
	// SSE streams are long-lived.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	ReadTimeout       time.Duration `yaml:"read_timeout"`
	WriteTimeout      time.Duration `yaml:"write_timeout"`
	IdleTimeout       time.Duration `yaml:"idle_timeout"`
	// ShutdownTimeout bounds the wait for in-flight runs on SIGTERM; default 30s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// WorkflowTimeoutSweep is how often paused workflow runs' HumanReview
	// timeouts are applied while serving; default 30s.
	WorkflowTimeoutSweep time.Duration `yaml:"workflow_timeout_sweep"`
}

// Addr is host:port for net.Listen.
func (s Server) Addr() string { return s.Host + ":" + strconv.Itoa(s.Port) }

// DB names the database.
type DB struct {
	// ID is the db_id AgentOS reports; empty means the dialect.
	ID string `yaml:"id"`
	// DSN: a SQLite path (default ./agentry.db), postgres://… or mysql://….
	DSN string `yaml:"dsn"`
	// QueryTimeout bounds every database call, waiting for a pooled
	// connection included (default 5s); a request that hits it is answered
	// 503, and GET /health/ready reports the database not ready.
	QueryTimeout time.Duration `yaml:"query_timeout"`
	// SQLiteExclusive keeps a SQLite database file to this server while it
	// runs (default false): no other process can open it meanwhile (a
	// Python Agno, the sqlite3 shell, `agentry migrate`), and each turn's
	// writes and reads take no file locks (sqlite.Config.Exclusive). Only
	// with a SQLite file DSN.
	SQLiteExclusive bool `yaml:"sqlite_exclusive"`
}

// Auth selects how callers authenticate. With neither set the server is open.
type Auth struct {
	// SecurityKey is a static bearer key granting admin access (env OS_SECURITY_KEY).
	SecurityKey string `yaml:"security_key"`
	JWT         *JWT   `yaml:"jwt"`
}

// JWT configures bearer JWT verification.
type JWT struct {
	// VerificationKeys: PEM public keys (RSA, ECDSA, Ed25519) or HMAC secrets;
	// each entry is a string or {kid, key}.
	VerificationKeys []VerificationKey `yaml:"verification_keys"`
	// JWKSFile is a JSON Web Key Set file; relative paths are from the config file.
	JWKSFile string `yaml:"jwks_file"`
	// Algorithm or Algorithms form the allow-list; default RS256.
	Algorithm  string   `yaml:"algorithm"`
	Algorithms []string `yaml:"algorithms"`
	// Claim names; defaults "sub" and "scopes"; the session id claim is off unless set.
	UserIDClaim    string `yaml:"user_id_claim"`
	SessionIDClaim string `yaml:"session_id_claim"`
	ScopesClaim    string `yaml:"scopes_claim"`
	// Audience (a string or list) is checked unless VerifyAudience is false.
	Audience       StringList `yaml:"audience"`
	VerifyAudience *bool      `yaml:"verify_audience"`
	Issuer         string     `yaml:"issuer"`
	// RequireKID refuses tokens without a "kid" header (and kids naming no
	// configured key); every verification key then needs a kid. Off by default:
	// a kid-less token is tried against every key.
	RequireKID bool `yaml:"require_kid"`
	// Leeway for exp/nbf/iat; unset (nil) means 10s, "0s" means none.
	Leeway *time.Duration `yaml:"leeway"`
	// TokenSource is "header" (default), "cookie" or "both" (header first).
	TokenSource string `yaml:"token_source"`
	// CookieName defaults to "access_token".
	CookieName string `yaml:"cookie_name"`
	// ExcludedRoutePaths skip authentication: exact paths, or a prefix ending in
	// "*" ("/public/*"). Default ["/health", "/health/ready"].
	ExcludedRoutePaths []string `yaml:"excluded_route_paths"`
	// Authorization enforces resource:action scopes on routes (403 without them).
	// Off by default: any valid token may call every route.
	Authorization bool `yaml:"authorization"`
	// MaxTokenBytes rejects longer tokens unparsed; default 8192.
	MaxTokenBytes int `yaml:"max_token_bytes"`
}

// Agent declares an agent served by the OS.
type Agent struct {
	ID          string `yaml:"id"`
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Model is "provider:model_id", e.g. "openai:gpt-4o", or "scripted:FILE"
	// (a relative FILE is relative to the config file),
	// or a mapping with id and the model's parameters (see Model).
	Model Model `yaml:"model"`
	// FallbackModels are tried in order when the model fails with a rate
	// limit, server or context-length error (Agno's fallback_models).
	FallbackModels []Model `yaml:"fallback_models"`
	// ReasoningModel (same form) runs a reasoning pass first (3.0's reasoning_model).
	ReasoningModel string     `yaml:"reasoning_model"`
	Instructions   StringList `yaml:"instructions"`
	// Tools are built-in tool or toolkit names, e.g. web_search.
	Tools []Tool `yaml:"tools"`
	// MCP lists MCP servers whose tools the agent may call (see MCPClient).
	MCP                 []MCPClient    `yaml:"mcp"`
	Markdown            bool           `yaml:"markdown"`
	AddHistoryToContext bool           `yaml:"add_history_to_context"`
	NumHistoryRuns      int            `yaml:"num_history_runs"`
	ToolCallLimit       int            `yaml:"tool_call_limit"`
	Metadata            map[string]any `yaml:"metadata"`
	// Memory settings (agent.MemoryConfig has the meaning of each; Agno
	// 3.0's names). They need the server's database; memories are per user.
	UpdateMemoryOnRun          bool  `yaml:"update_memory_on_run"`
	EnableAgenticMemory        bool  `yaml:"enable_agentic_memory"`
	AddMemoriesToContext       *bool `yaml:"add_memories_to_context"`
	MemoryModel                Model `yaml:"memory_model"`
	EnableSessionSummaries     bool  `yaml:"enable_session_summaries"`
	AddSessionSummaryToContext *bool `yaml:"add_session_summary_to_context"`
	SearchPastSessions         bool  `yaml:"search_past_sessions"`
	NumPastSessionsToSearch    int   `yaml:"num_past_sessions_to_search"`
	NumPastSessionRunsInSearch int   `yaml:"num_past_session_runs_in_search"`
	// CodeMode gives the model a sandboxed code environment whose functions
	// are tools (see CodeMode).
	CodeMode *CodeMode `yaml:"code_mode"`

	// Agent controls (agent.Config has the meaning of each; controls.go).
	// pre_hooks and post_hooks name guardrails: pii_detection,
	// prompt_injection, openai_moderation (post: pii_detection,
	// openai_moderation), each a name or {name, options} with Agno's
	// parameter names. tool_hooks: log.
	PreHooks  []Hook `yaml:"pre_hooks"`
	PostHooks []Hook `yaml:"post_hooks"`
	ToolHooks []Hook `yaml:"tool_hooks"`
	// InputSchema is a JSON Schema, written as YAML.
	InputSchema map[string]any `yaml:"input_schema"`
	// OutputSchema is a JSON Schema for structured output, written as YAML
	// (agent.Config.OutputSchema); StrictOutput asks providers that
	// enforce one (OpenAI) to, for it and for a run's own output_schema
	// (agent.Config.StrictOutput).
	OutputSchema      map[string]any `yaml:"output_schema"`
	StrictOutput      bool           `yaml:"strict_output"`
	ParserModel       Model          `yaml:"parser_model"`
	ParserModelPrompt string         `yaml:"parser_model_prompt"`
	OutputModel       Model          `yaml:"output_model"`
	OutputModelPrompt string         `yaml:"output_model_prompt"`
	CacheResults      bool           `yaml:"cache_results"`
	// CacheTTL is in seconds, as Agno's cache_ttl.
	CacheTTL             float64 `yaml:"cache_ttl"`
	AdditionalContext    string  `yaml:"additional_context"`
	ExpectedOutput       string  `yaml:"expected_output"`
	AddDatetimeToContext bool    `yaml:"add_datetime_to_context"`
	TimezoneIdentifier   string  `yaml:"timezone_identifier"`
	AddLocationToContext bool    `yaml:"add_location_to_context"`
	Location             string  `yaml:"location"`
	AddNameToContext     bool    `yaml:"add_name_to_context"`
	ToolChoice           string  `yaml:"tool_choice"`
	Retries              int     `yaml:"retries"`
	// DelayBetweenRetries is in seconds, as Agno's delay_between_retries;
	// absent takes Agno's default (1), 0 retries at once.
	DelayBetweenRetries *float64 `yaml:"delay_between_retries"`
	ExponentialBackoff  bool     `yaml:"exponential_backoff"`
	DebugMode           bool     `yaml:"debug_mode"`
	// OffloadToolResults stores tool results over the threshold outside the
	// context (true, false or a map of threshold_chars, preview_lines,
	// preview_chars, ttl); absent takes the server-wide setting.
	OffloadToolResults *offload.Setting `yaml:"offload_tool_results"`
	// MediaStorage overrides the server-wide media_storage for this agent.
	MediaStorage *MediaStorage `yaml:"media_storage"`
	// Knowledge gives the agent the server's knowledge base; with it,
	// search_knowledge (default true) adds the search tool,
	// add_knowledge_to_context the hits to the user message, and
	// knowledge_filters restrict every search by metadata.
	Knowledge             bool           `yaml:"knowledge"`
	SearchKnowledge       *bool          `yaml:"search_knowledge"`
	AddKnowledgeToContext bool           `yaml:"add_knowledge_to_context"`
	KnowledgeFilters      map[string]any `yaml:"knowledge_filters"`
}

// Team declares a team of agents.
type Team struct {
	ID           string     `yaml:"id"`
	Name         string     `yaml:"name"`
	Description  string     `yaml:"description"`
	Model        string     `yaml:"model"`
	Instructions StringList `yaml:"instructions"`
	// Members are ids of agents declared in agents or of other teams
	// (nesting, at most team.MaxNestingDepth levels, no cycles).
	Members []string `yaml:"members"`
	// Mode is coordinate (default), route, broadcast or tasks.
	Mode string `yaml:"mode"`
	// RespondDirectly makes a member's answer the team's (route implies it).
	RespondDirectly bool `yaml:"respond_directly"`
	// DelegateToAllMembers gives the leader delegate_task_to_members
	// (broadcast implies it).
	DelegateToAllMembers bool `yaml:"delegate_to_all_members"`
	// MaxIterations bounds tasks mode's iterations (default 10); tasks only.
	MaxIterations int `yaml:"max_iterations"`
	// StreamMemberEvents (default true) forwards member events on the
	// team's stream; StoreMemberResponses (default true) stores member runs
	// in the team run's member_responses.
	StreamMemberEvents   *bool `yaml:"stream_member_events"`
	StoreMemberResponses *bool `yaml:"store_member_responses"`
	// MaxConcurrentMembers bounds the member runs of one team run running
	// at once (broadcast, execute_tasks_parallel, delegations of one turn);
	// 0 (default) is no bound.
	MaxConcurrentMembers int `yaml:"max_concurrent_members"`
	// StoreEvents stores the team run's events, and the member events
	// forwarded on its stream, in the stored team run (as Agno).
	StoreEvents bool `yaml:"store_events"`

	AddHistoryToContext bool           `yaml:"add_history_to_context"`
	NumHistoryRuns      int            `yaml:"num_history_runs"`
	Metadata            map[string]any `yaml:"metadata"`
	// What members get besides their task (Agno's team parameters):
	// add_team_history_to_members puts the team's last
	// num_team_history_runs (default 3) completed runs before each task,
	// share_member_interactions the team run's earlier member runs, and
	// determine_input_for_members false sends a delegated member the team
	// run's input instead of the leader's task.
	AddTeamHistoryToMembers  bool  `yaml:"add_team_history_to_members"`
	NumTeamHistoryRuns       int   `yaml:"num_team_history_runs"`
	ShareMemberInteractions  bool  `yaml:"share_member_interactions"`
	DetermineInputForMembers *bool `yaml:"determine_input_for_members"`
	// Memory settings, as on agents (the leader's; Agno's team has the same).
	UpdateMemoryOnRun          bool   `yaml:"update_memory_on_run"`
	EnableAgenticMemory        bool   `yaml:"enable_agentic_memory"`
	AddMemoriesToContext       *bool  `yaml:"add_memories_to_context"`
	MemoryModel                string `yaml:"memory_model"`
	EnableSessionSummaries     bool   `yaml:"enable_session_summaries"`
	AddSessionSummaryToContext *bool  `yaml:"add_session_summary_to_context"`
	SearchPastSessions         bool   `yaml:"search_past_sessions"`
	NumPastSessionsToSearch    int    `yaml:"num_past_sessions_to_search"`
	NumPastSessionRunsInSearch int    `yaml:"num_past_session_runs_in_search"`
	// CodeMode gives the leader a code environment; its code_mode.tools are
	// callable from code.
	CodeMode *CodeMode `yaml:"code_mode"`
	// OffloadToolResults offloads the leader's oversized tool results, and
	// those of members that have no setting of their own.
	OffloadToolResults *offload.Setting `yaml:"offload_tool_results"`
	// MediaStorage overrides the server-wide media_storage for the team
	// run (and members without their own).
	MediaStorage *MediaStorage `yaml:"media_storage"`
}

// Workflow declares a workflow: its steps (see WorkflowStep) run by agents,
// teams, registered Go functions and the primitives around them.
type Workflow struct {
	ID          string         `yaml:"id"`
	Name        string         `yaml:"name"`
	Description string         `yaml:"description"`
	Steps       []WorkflowStep `yaml:"steps"`
	// OffloadToolResults and MediaStorage apply to the steps' runs that
	// have no setting of their own; the workflow run's own media (its
	// input) go to MediaStorage (default: the server-wide media_storage).
	OffloadToolResults *offload.Setting `yaml:"offload_tool_results"`
	MediaStorage       *MediaStorage    `yaml:"media_storage"`
}

// MCPServer exposes the OS as an MCP server (3.0's mcp_server). In YAML:
// true, false, or a mapping of these keys (a mapping enables the server
// unless it says enabled: false).
type MCPServer struct {
	Enabled bool `yaml:"enabled"`
	// Path defaults to /mcp.
	Path string `yaml:"path"`
	// Stateless serves each request with a fresh MCP session, so several
	// replicas can serve the endpoint.
	Stateless bool `yaml:"stateless"`
	// Tools are built-in tools (as on agents) served next to the built-in
	// MCP tools.
	Tools []Tool `yaml:"tools"`
	// EnableBuiltinTools (default true), IncludeTags and ExcludeTags ("core",
	// "session") select the built-in MCP tools; include_tags: [] keeps none.
	EnableBuiltinTools *bool    `yaml:"enable_builtin_tools"`
	IncludeTags        []string `yaml:"include_tags"`
	ExcludeTags        []string `yaml:"exclude_tags"`
	// ResultMode is "trimmed" (default: the answer, capped at
	// MaxResultBytes, and ids) or "full" (the whole run).
	ResultMode     string   `yaml:"result_mode"`
	MaxResultBytes ByteSize `yaml:"max_result_bytes"`
}

// mcpServerKeys are the keys of the mapping form.
var mcpServerKeys = []string{"enabled", "path", "stateless", "tools", "enable_builtin_tools", "include_tags", "exclude_tags",
	"result_mode", "max_result_bytes"}

// UnmarshalYAML reads true, false or a mapping.
func (m *MCPServer) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var on bool
		if err := n.Decode(&on); err != nil {
			return fmt.Errorf("line %d: mcp_server is true, false or a mapping (%s)", n.Line, strings.Join(mcpServerKeys, ", "))
		}
		m.Enabled = on
		return nil
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; !slices.Contains(mcpServerKeys, k.Value) {
				return fmt.Errorf("line %d: field %s not found in mcp_server (allowed: %s)", k.Line, k.Value, strings.Join(mcpServerKeys, ", "))
			}
		}
		type plain MCPServer
		out := plain(*m)
		out.Enabled = true
		if err := n.Decode(&out); err != nil {
			return err
		}
		*m = MCPServer(out)
		return nil
	}
	return fmt.Errorf("line %d: mcp_server is true, false or a mapping (%s)", n.Line, strings.Join(mcpServerKeys, ", "))
}

// Defaults.
const (
	DefaultHost        = "127.0.0.1"
	DefaultPort        = 7777
	DefaultDSN         = "./agentry.db"
	DefaultBodyLimit   = 32 << 20
	DefaultCookieName  = "access_token"
	DefaultTokenSource = "header"
	DefaultMCPPath     = "/mcp"
	// DefaultQueryTimeout matches db.DefaultQueryTimeout.
	DefaultQueryTimeout = 5 * time.Second
)

// DefaultCORSOrigins are the browser origins allowed when none are configured:
// a web client on port 3000 of this machine under both of its names (`next
// dev` prints localhost, `next start -H 127.0.0.1` prints 127.0.0.1, and a
// browser sends the Origin of the address it was given).
func DefaultCORSOrigins() []string {
	return []string{"http://localhost:3000", "http://127.0.0.1:3000"}
}

// Default is the configuration of `agentry serve` with no flags or file.
func Default() Config {
	return Config{
		Server: Server{
			Host:              DefaultHost,
			Port:              DefaultPort,
			CORSOrigins:       DefaultCORSOrigins(),
			BodyLimit:         DefaultBodyLimit,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       60 * time.Second,
			IdleTimeout:       120 * time.Second,
			ShutdownTimeout:   30 * time.Second,
		},
		DB:        DB{DSN: DefaultDSN, QueryTimeout: DefaultQueryTimeout},
		MCPServer: MCPServer{Path: DefaultMCPPath},
	}
}

// fillJWTDefaults sets the JWT block's defaults after decoding.
func (j *JWT) fillDefaults() {
	if j.TokenSource == "" {
		j.TokenSource = DefaultTokenSource
	}
	if j.CookieName == "" {
		j.CookieName = DefaultCookieName
	}
	if j.ExcludedRoutePaths == nil {
		j.ExcludedRoutePaths = []string{"/health", "/health/ready"}
	}
}

// ByteSize is a size in bytes, written as an integer or with a unit
// (B, KB, MB, GB, KiB, MiB, GiB).
type ByteSize int64

// UnmarshalYAML implements yaml.Unmarshaler.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: a size must be a number or a string like \"32MiB\"", n.Line)
	}
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*b = v
	return nil
}

// ParseByteSize reads "1048576", "512KB", "32MiB", "1GB".
func ParseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"B", 1}}
	mult := int64(1)
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("invalid size %q: use a non-negative number of bytes or e.g. \"32MiB\"", s)
	}
	return ByteSize(n * mult), nil
}

// StringList is a list written as one string or a sequence of strings.
type StringList []string

// UnmarshalYAML implements yaml.Unmarshaler.
func (l *StringList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*l = StringList{n.Value}
		return nil
	case yaml.SequenceNode:
		out := make(StringList, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return fmt.Errorf("line %d: expected a string", c.Line)
			}
			out = append(out, c.Value)
		}
		*l = out
		return nil
	}
	return fmt.Errorf("line %d: expected a string or a list of strings", n.Line)
}

// VerificationKey is a PEM public key, a path to a PEM or JWKS file, or an
// HMAC secret, optionally with a kid (see auth.LoadKey). In YAML: a string, or
// {kid: ..., key: ...}.
type VerificationKey struct {
	KID string
	Key string
	// dir resolves a relative key file path: the config file's directory for
	// entries read from a file, "" (the working directory) otherwise.
	dir string
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (k *VerificationKey) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*k = VerificationKey{Key: n.Value}
		return nil
	case yaml.MappingNode:
		fields, err := scalarFields(n, "verification key", "kid", "key")
		if err != nil {
			return err
		}
		*k = VerificationKey{KID: fields["kid"], Key: fields["key"]}
		return nil
	}
	return fmt.Errorf("line %d: a verification key is a string or {kid, key}", n.Line)
}

// Tool names a built-in tool or toolkit; in YAML a string or {name, options}.
// Options are decoded by the toolkit (tool/builtin): unknown keys are errors.
type Tool struct {
	Name    string
	Options map[string]any
	// HumanReview pauses the run at each call (an agent's tools only).
	HumanReview *ToolReview
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (t *Tool) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*t = Tool{Name: n.Value}
		return nil
	case yaml.MappingNode:
		var out Tool
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			switch key.Value {
			case "name":
				if val.Kind != yaml.ScalarNode {
					return fmt.Errorf("line %d: tool name must be a string", val.Line)
				}
				out.Name = val.Value
			case "options":
				if err := val.Decode(&out.Options); err != nil {
					return err
				}
			case "human_review":
				out.HumanReview = &ToolReview{}
				if err := out.HumanReview.decode(val); err != nil {
					return err
				}
			default:
				return fmt.Errorf("line %d: field %s not found in tool (allowed: name, options, human_review)", key.Line, key.Value)
			}
		}
		*t = out
		return nil
	}
	return fmt.Errorf("line %d: a tool is a name or {name, options, human_review}", n.Line)
}

// scalarFields reads a mapping of scalar values, rejecting unknown keys
// (Node.Decode would not apply the decoder's KnownFields).
func scalarFields(n *yaml.Node, what string, allowed ...string) (map[string]string, error) {
	out := map[string]string{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		known := false
		for _, a := range allowed {
			known = known || a == key.Value
		}
		if !known {
			return nil, fmt.Errorf("line %d: field %s not found in %s (allowed: %s)", key.Line, key.Value, what, strings.Join(allowed, ", "))
		}
		if val.Kind != yaml.ScalarNode {
			return nil, fmt.Errorf("line %d: %s.%s must be a string", val.Line, what, key.Value)
		}
		out[key.Value] = val.Value
	}
	return out, nil
}

// OffloadFor resolves an agent's offload_tool_results: its own setting, else
// the file's, else serverDefault (true for `agentry serve`) for an agent with
// tools (one without has nothing to offload). Nil means off.
func (c Config) OffloadFor(a Agent, serverDefault bool) *offload.Config {
	switch {
	case a.OffloadToolResults != nil && a.OffloadToolResults.Set:
		return a.OffloadToolResults.On()
	case c.OffloadToolResults != nil && c.OffloadToolResults.Set:
		return c.OffloadToolResults.On()
	case serverDefault && len(a.Tools) > 0:
		return &offload.Config{}
	}
	return nil
}
