package config

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/mcp/mcpserver"
	"github.com/agentryhq/agentry/tool/builtin"
)

// idPattern keeps ids usable as one URL path segment.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Validate reports every invalid value, joined.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("config: "+format, args...)) }

	c.Queue.validate(bad)
	c.Tracing.validate(bad)
	c.Schedules.validate(c.Queue, bad)
	if err := c.Knowledge.Validate(); err != nil {
		bad("%v", err)
	}
	s := c.Server
	if s.Port < 0 || s.Port > 65535 {
		bad("server.port %d is out of range (0-65535)", s.Port)
	}
	if s.BodyLimit <= 0 {
		bad("server.body_limit must be positive")
	}
	for name, d := range map[string]int64{"read_header_timeout": int64(s.ReadHeaderTimeout), "read_timeout": int64(s.ReadTimeout),
		"write_timeout": int64(s.WriteTimeout), "idle_timeout": int64(s.IdleTimeout), "shutdown_timeout": int64(s.ShutdownTimeout),
		"workflow_timeout_sweep": int64(s.WorkflowTimeoutSweep)} {
		if d < 0 {
			bad("server.%s must not be negative", name)
		}
	}
	for _, o := range s.CORSOrigins {
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			bad("server.cors_origins: %q must be \"*\" or start with http:// or https://", o)
		}
	}
	if d, err := dsn.Parse(c.DB.DSN); err != nil {
		bad("db.dsn (--db): %v", err)
	} else if c.DB.SQLiteExclusive && (d.Dialect != dsn.SQLite || d.Path == ":memory:") {
		what := string(d.Dialect)
		if d.Path == ":memory:" {
			what = ":memory:"
		}
		bad("db.sqlite_exclusive is for a SQLite database file, not %s", what)
	}
	if c.DB.QueryTimeout <= 0 {
		bad("db.query_timeout must be positive (e.g. 5s)")
	}
	if j := c.Auth.JWT; j != nil {
		if len(j.VerificationKeys) == 0 && j.JWKSFile == "" {
			bad("auth.jwt needs verification_keys or jwks_file")
		}
		if j.Algorithm != "" && len(j.Algorithms) > 0 {
			bad("auth.jwt: set algorithm or algorithms, not both")
		}
		if !slices.Contains([]string{"header", "cookie", "both"}, j.TokenSource) {
			bad("auth.jwt.token_source %q: use header, cookie or both", j.TokenSource)
		}
		if j.TokenSource == "header" && j.CookieName != DefaultCookieName {
			bad("auth.jwt.cookie_name applies with token_source cookie or both (token_source is header): set it (or remove cookie_name)")
		}
		for _, p := range j.ExcludedRoutePaths {
			if !strings.HasPrefix(p, "/") {
				bad("auth.jwt.excluded_route_paths: %q must start with /", p)
			}
		}
		if j.VerifyAudience != nil && *j.VerifyAudience && len(j.Audience) == 0 {
			bad("auth.jwt.verify_audience is true but no audience is set, so no token's aud would be checked: set auth.jwt.audience, or drop verify_audience")
		}
		if (j.Leeway != nil && *j.Leeway < 0) || j.MaxTokenBytes < 0 {
			bad("auth.jwt: leeway and max_token_bytes must not be negative")
		}
	}
	if k := c.Auth.SecurityKey; k != "" && len(k) < auth.MinSecurityKeyBytes {
		bad("auth.security_key (or OS_SECURITY_KEY) is %d bytes; use at least %d random bytes (e.g. openssl rand -hex 32)", len(k), auth.MinSecurityKeyBytes)
	}
	if c.UserIsolation && c.Auth.JWT == nil {
		bad("user_isolation needs auth.jwt: the security key alone identifies no user")
	}
	if m := c.MCPServer; m.Enabled && !strings.HasPrefix(m.Path, "/") {
		bad("mcp_server.path %q must start with /", m.Path)
	} else if !m.Enabled {
		for _, s := range []struct {
			set bool
			key string
		}{
			{m.Path != "" && m.Path != DefaultMCPPath, "path"}, {m.Stateless, "stateless"}, {len(m.Tools) > 0, "tools"},
			{m.EnableBuiltinTools != nil, "enable_builtin_tools"}, {m.IncludeTags != nil, "include_tags"},
			{m.ExcludeTags != nil, "exclude_tags"}, {m.ResultMode != "", "result_mode"}, {m.MaxResultBytes != 0, "max_result_bytes"},
		} {
			if s.set {
				bad("mcp_server.%s applies to an enabled MCP server: drop enabled: false (or remove it)", s.key)
			}
		}
	}
	for _, t := range c.MCPServer.Tools {
		noToolReview(bad, "mcp_server.tools", t)
	}
	if err := c.MCPServer.options().Validate(); err != nil {
		bad("mcp_server: %v", strings.TrimPrefix(err.Error(), mcpserver.ErrConfig.Error()+": "))
	}

	agents := map[string]bool{}
	for i, a := range c.Agents {
		c.checkAgent(bad, i, true)
		if a.ID != "" && agents[a.ID] {
			bad("agents[%d]: duplicate id %q", i, a.ID)
		}
		agents[a.ID] = true
	}
	teams := map[string]bool{}
	for i, t := range c.Teams {
		where := fmt.Sprintf("teams[%d]", i)
		checkID(bad, where, t.ID, teams)
		checkModel(bad, where+".model", t.Model, false)
		if len(t.Members) == 0 {
			bad("%s: a team needs members", where)
		}
		t.CodeMode.validate(bad, where)
		checkModel(bad, where+".memory_model", t.MemoryModel, false)
		if t.NumPastSessionsToSearch < 0 || t.NumPastSessionRunsInSearch < 0 {
			bad("%s: num_past_sessions_to_search and num_past_session_runs_in_search must not be negative", where)
		}
		if t.NumHistoryRuns < 0 {
			bad("%s.num_history_runs must not be negative", where)
		}
		for k, n := range []int{t.NumPastSessionsToSearch, t.NumPastSessionRunsInSearch} {
			if name := [...]string{"num_past_sessions_to_search", "num_past_session_runs_in_search"}[k]; n != 0 && !t.SearchPastSessions {
				bad("%s.%s applies with search_past_sessions: true only: set it (or remove %s)", where, name, name)
			}
		}
	}
	c.checkTeamMembers(bad, agents)
	workflows, decls := map[string]bool{}, map[string]Workflow{}
	for i, w := range c.Workflows {
		checkID(bad, fmt.Sprintf("workflows[%d]", i), w.ID, workflows)
		decls[w.ID] = w
	}
	for i, w := range c.Workflows {
		where := fmt.Sprintf("workflows[%d]", i)
		if len(w.Steps) == 0 {
			bad("%s: a workflow needs steps", where)
		}
		checkWorkflowSteps(bad, where+".steps", w.Steps, agents, teams, workflows)
		if path := w.cycle(decls); path != nil && path[len(path)-1] == w.ID {
			bad("%s: a workflow may not contain itself, directly or through other workflows: %s", where, strings.Join(path, " → "))
		}
	}
	return errors.Join(errs...)
}

// checkAgent reports agent i's invalid values. Its keys are under agents[i],
// or at the top level of a one-agent file. An id is required to serve the
// agent (it names the agent's routes), not to run it once.
func (c *Config) checkAgent(bad func(string, ...any), i int, serving bool) {
	a := c.Agents[i]
	key := func(k string) string { return fmt.Sprintf("agents[%d].%s", i, k) }
	where := fmt.Sprintf("agents[%d]", i)
	if c.agentFile {
		key = func(k string) string { return k }
		where = "agent"
	}
	switch {
	case a.ID == "" && serving && c.agentFile:
		bad("id is required to serve an agent (its runs are at /agents/{id}/runs): add `id: my-agent`")
	case a.ID == "" && serving:
		bad("%s: id is required", where)
	case a.ID != "" && !idPattern.MatchString(a.ID):
		bad("%s %q may only use letters, digits, '.', '_' and '-'", key("id"), a.ID)
	}
	checkModel(bad, key("model"), a.Model.Spec, true)
	for j, fm := range a.FallbackModels {
		checkModel(bad, fmt.Sprintf("%s[%d]", key("fallback_models"), j), fm.Spec, true)
	}
	checkModel(bad, key("reasoning_model"), a.ReasoningModel, false)
	if a.NumHistoryRuns < 0 || a.ToolCallLimit < 0 {
		bad("%s: num_history_runs and tool_call_limit must not be negative", where)
	}
	if a.NumPastSessionsToSearch < 0 || a.NumPastSessionRunsInSearch < 0 {
		bad("%s: num_past_sessions_to_search and num_past_session_runs_in_search must not be negative", where)
	}
	checkModel(bad, key("memory_model"), a.MemoryModel.Spec, false)
	for _, t := range a.Tools {
		if t.Name == "" {
			bad("%s: a tool needs a name", key("tools"))
		} else if err := builtin.Check(t.Name, t.Options); err != nil {
			bad("%s: %v", key("tools"), err)
		}
	}
	a.CodeMode.validate(bad, where)
	checkModel(bad, key("parser_model"), a.ParserModel.Spec, false)
	checkModel(bad, key("output_model"), a.OutputModel.Spec, false)
	probe := a
	probe.ParserModel, probe.OutputModel, probe.MemoryModel = Model{}, Model{}, Model{} // checked above; built at start
	var cfg agent.Config
	if err := probe.controls(&cfg); err != nil {
		bad("%s: %v", where, err)
	}
	if tz := a.TimezoneIdentifier; tz != "" {
		if _, err := time.LoadLocation(tz); err != nil {
			bad("%s %q is not an IANA time zone (e.g. Europe/Paris)", key("timezone_identifier"), tz)
		}
	}
	if a.AddLocationToContext && a.Location == "" {
		bad("%s needs %s (e.g. \"Paris, France\"): Agentry does not look the location up over the network", key("add_location_to_context"), key("location"))
	}
	if a.AddNameToContext && a.Name == "" {
		bad("%s needs %s", key("add_name_to_context"), key("name"))
	}
	// A setting that only refines another does nothing without it:
	// refused rather than accepted and ignored.
	for _, r := range []struct {
		set   bool
		key   string
		needs string
	}{
		{a.CacheTTL != 0 && !a.CacheResults, "cache_ttl", "cache_results: true"},
		{a.DelayBetweenRetries != nil && *a.DelayBetweenRetries != 0 && a.Retries == 0, "delay_between_retries", "retries"},
		{a.ExponentialBackoff && a.Retries == 0, "exponential_backoff", "retries"},
		{a.ParserModelPrompt != "" && a.ParserModel.Spec == "", "parser_model_prompt", "parser_model"},
		{a.OutputModelPrompt != "" && a.OutputModel.Spec == "", "output_model_prompt", "output_model"},
		{a.TimezoneIdentifier != "" && !a.AddDatetimeToContext, "timezone_identifier", "add_datetime_to_context: true"},
		{a.Location != "" && !a.AddLocationToContext, "location", "add_location_to_context: true"},
		{a.NumPastSessionsToSearch != 0 && !a.SearchPastSessions, "num_past_sessions_to_search", "search_past_sessions: true"},
		{a.NumPastSessionRunsInSearch != 0 && !a.SearchPastSessions, "num_past_session_runs_in_search", "search_past_sessions: true"},
	} {
		if r.set {
			bad("%s applies with %s only: set it (or remove %s)", key(r.key), r.needs, r.key)
		}
	}
}

func checkID(bad func(string, ...any), where, id string, seen map[string]bool) {
	switch {
	case id == "":
		bad("%s: id is required", where)
	case !idPattern.MatchString(id):
		bad("%s: id %q may only use letters, digits, '.', '_' and '-'", where, id)
	case seen[id]:
		bad("%s: duplicate id %q", where, id)
	}
	seen[id] = true
}

func checkModel(bad func(string, ...any), where, model string, required bool) {
	if model == "" {
		if required {
			bad("%s is required (\"provider:model_id\", e.g. \"openai:gpt-4o\")", where)
		}
		return
	}
	provider, id, ok := strings.Cut(model, ":")
	if !ok || provider == "" || id == "" {
		bad("%s %q: use \"provider:model_id\", e.g. \"openai:gpt-4o\"", where, model)
	}
}

// Authenticator builds the request authenticator from the auth block, reading
// key files and the JWKS file. It returns a disabled authenticator when neither a security key
// nor JWT is configured.
func (a Auth) Authenticator() (*auth.Authenticator, error) {
	var v *auth.JWTVerifier
	if j := a.JWT; j != nil {
		var keys []auth.Key
		for i, vk := range j.VerificationKeys {
			k, err := auth.LoadKey(vk.KID, vk.Key, vk.dir)
			if err != nil {
				return nil, fmt.Errorf("config: auth.jwt.verification_keys[%d]: %w", i, err)
			}
			keys = append(keys, k...)
		}
		if j.JWKSFile != "" {
			data, err := os.ReadFile(j.JWKSFile)
			if err != nil {
				return nil, fmt.Errorf("config: auth.jwt.jwks_file: %w", err)
			}
			jk, skipped, err := auth.ReadJWKS(data)
			if err != nil {
				return nil, fmt.Errorf("config: auth.jwt.jwks_file %s: %w", j.JWKSFile, err)
			}
			// A key left out (malformed, weak, of an unsupported type)
			// must not refuse the set's good keys, nor go unnoticed.
			for _, sk := range skipped {
				slog.Warn("auth.jwt.jwks_file: a key is left out and verifies no token", "file", j.JWKSFile, "index", sk.Index, "kid", sk.KID, "reason", sk.Err)
			}
			keys = append(keys, jk...)
		}
		algs := j.Algorithms
		if j.Algorithm != "" {
			algs = []string{j.Algorithm}
		}
		var aud []string
		if j.VerifyAudience == nil || *j.VerifyAudience {
			aud = j.Audience
		}
		var err error
		v, err = auth.NewJWTVerifier(auth.JWTConfig{
			Keys:           keys,
			Algorithms:     algs,
			UserIDClaim:    j.UserIDClaim,
			SessionIDClaim: j.SessionIDClaim,
			ScopesClaim:    j.ScopesClaim,
			Audience:       aud,
			Issuer:         j.Issuer,
			RequireKID:     j.RequireKID,
			Leeway:         j.Leeway,
			MaxTokenBytes:  j.MaxTokenBytes,
		})
		if err != nil {
			return nil, fmt.Errorf("config: auth.jwt: %w", err)
		}
	}
	authn, err := auth.NewAuthenticator(a.SecurityKey, v)
	if err != nil {
		return nil, fmt.Errorf("config: auth.security_key (OS_SECURITY_KEY): %w", err)
	}
	return authn, nil
}
