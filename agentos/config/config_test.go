package config

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestLoad_ExampleFileIsValid(t *testing.T) {
	t.Parallel()
	cfg, err := Load(filepath.Join("..", "..", "examples", "agentos.yaml"), env(nil))
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	if cfg.Server.Addr() != "127.0.0.1:7777" || cfg.Server.BodyLimit != 32<<20 || cfg.Server.ShutdownTimeout != 30*time.Second {
		t.Errorf("server = %+v", cfg.Server)
	}
	if len(cfg.Agents) != 3 || cfg.Agents[0].ID != "assistant" || cfg.Agents[0].Tools[0].Name != "calculator" ||
		len(cfg.Agents[0].Instructions) != 2 {
		t.Errorf("agents = %+v", cfg.Agents)
	}
	if cfg.Agents[2].ReasoningModel != "openai:o4-mini" || len(cfg.Teams) != 1 || len(cfg.Workflows) != 1 {
		t.Errorf("reasoning model / teams / workflows not read: %+v %+v %+v", cfg.Agents[2], cfg.Teams, cfg.Workflows)
	}
	a, err := cfg.Auth.Authenticator()
	if err != nil || a.Enabled() {
		t.Errorf("example auth: enabled=%v err=%v", a.Enabled(), err)
	}
}

func TestLoad_NoFileGivesDefaults(t *testing.T) {
	t.Parallel()
	cfg, err := Load("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.Addr() != "127.0.0.1:7777" || cfg.DB.DSN != "./agentry.db" ||
		!slices.Equal(cfg.Server.CORSOrigins, []string{"http://localhost:3000", "http://127.0.0.1:3000"}) {
		t.Errorf("defaults = %+v", cfg)
	}
}

func TestParse_DBQueryTimeout(t *testing.T) {
	t.Parallel()
	tests := map[string]time.Duration{
		"db:\n  dsn: x.db\n":                      5 * time.Second, // the default
		"db:\n  query_timeout: 250ms\n":           250 * time.Millisecond,
		"db:\n  dsn: x.db\n  query_timeout: 1m\n": time.Minute,
	}
	for yaml, want := range tests {
		cfg, err := Parse([]byte(yaml), "os.yaml")
		if err != nil {
			t.Fatalf("%q: %v", yaml, err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("%q: %v", yaml, err)
		}
		if cfg.DB.QueryTimeout != want {
			t.Errorf("%q: query_timeout = %s, want %s", yaml, cfg.DB.QueryTimeout, want)
		}
	}
	if _, err := Parse([]byte("db:\n  query_timeout: soon\n"), "os.yaml"); err == nil {
		t.Error("query_timeout: soon was accepted")
	}
}

func TestValidate_SQLiteExclusiveOnlyForASQLiteFile(t *testing.T) {
	t.Parallel()
	for yaml, want := range map[string]string{
		"db:\n  dsn: x.db\n  sqlite_exclusive: true\n":                      "",
		"db:\n  sqlite_exclusive: true\n":                                   "", // the default ./agentry.db
		"db:\n  dsn: ':memory:'\n  sqlite_exclusive: true\n":                "not :memory:",
		"db:\n  dsn: postgres://u:secret@h/d\n  sqlite_exclusive: true\n":   "not postgres",
		"db:\n  dsn: mysql://u:secret@h:3306/d\n  sqlite_exclusive: true\n": "not mysql",
		"db:\n  dsn: postgres://u:secret@h/d\n  sqlite_exclusive: false\n":  "",
	} {
		cfg, err := Parse([]byte(yaml), "os.yaml")
		if err != nil {
			t.Fatalf("%q: %v", yaml, err)
		}
		err = cfg.Validate()
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", yaml, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), "db.sqlite_exclusive") || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: %v; want an error naming db.sqlite_exclusive and %q", yaml, err, want)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("%q: the error shows the DSN's password: %v", yaml, err)
		}
		if want == "" && !cfg.DB.SQLiteExclusive && strings.Contains(yaml, "true") {
			t.Errorf("%q: sqlite_exclusive not read", yaml)
		}
	}
}

func TestParse_RejectsUnknownKeysNamingKeyAndLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml string
		want       []string
	}{
		{"top level", "server:\n  port: 1\nbogus: 1\n", []string{"os.yaml:3", "bogus"}},
		{"server", "server:\n  prot: 1\n", []string{"os.yaml:2", "prot"}},
		{"agent entry", "agents:\n  - id: a\n    model: x:y\n    temprature: 1\n", []string{"os.yaml:4", "temprature"}},
		{"jwt block", "auth:\n  jwt:\n    verification_key: x\n", []string{"os.yaml:3", "verification_key"}},
		{"verification key mapping", "auth:\n  jwt:\n    verification_keys:\n      - kid: a\n        pem: x\n", []string{"os.yaml:5", "pem"}},
		{"tool mapping", "agents:\n  - id: a\n    model: x:y\n    tools:\n      - name: web_search\n        args: {}\n", []string{"os.yaml:6", "args"}},
		{"two documents", "server:\n  port: 1\n---\nserver:\n  port: 2\n", []string{"one"}},
		{"wrong type", "server:\n  port: eighty\n", []string{"os.yaml:2"}},
		{"bad size", "server:\n  body_limit: lots\n", []string{"os.yaml:2", "lots"}},
		{"bad duration", "server:\n  idle_timeout: soon\n", []string{"os.yaml:2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.yaml), "os.yaml")
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range append(tt.want, "os.yaml") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParse_RenamedKeysNameTheNewKey(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, old, new string
		line                 string
	}{
		{"enable_user_memories in agent", "agents:\n  - id: a\n    enable_user_memories: true\n", "enable_user_memories", "update_memory_on_run", "os.yaml:3"},
		{"search_session_history", "agents:\n  - id: a\n    search_session_history: true\n", "search_session_history", "search_past_sessions", "os.yaml:3"},
		{"num_history_sessions", "agents:\n  - id: a\n    num_history_sessions: 2\n", "num_history_sessions", "num_past_sessions_to_search", "os.yaml:3"},
		{"reasoning true", "agents:\n  - id: a\n    reasoning: true\n", "reasoning", "reasoning_model", "os.yaml:3"},
		{"enable_mcp_server top level", "enable_mcp_server: true\n", "enable_mcp_server", "mcp_server", "os.yaml:1"},
		{"mcp_config top level", "mcp_config:\n  path: /x\n", "mcp_config", "mcp_server", "os.yaml:1"},
		{"jwt secret_key", "auth:\n  jwt:\n    secret_key: abc\n", "secret_key", "verification_keys", "os.yaml:3"},
		{"duckduckgo tool", "agents:\n  - id: a\n    tools: [duckduckgo_search]\n", "duckduckgo_search", "web_search", "os.yaml:3"},
		{"duckduckgo tool mapping", "agents:\n  - id: a\n    tools:\n      - name: duckduckgo_search\n", "duckduckgo_search", "web_search", "os.yaml:4"},
		{"eval_id", "evals:\n  - eval_id: e1\n", "eval_id", "run_id", "os.yaml:2"},
		{"eval_id top level", "eval_id: e1\n", "eval_id", "run_id", "os.yaml:1"},
		{"num_history_sessions top level", "num_history_sessions: 2\n", "num_history_sessions", "num_past_sessions_to_search", "os.yaml:1"},
		{"team entry", "teams:\n  - id: t\n    enable_user_memories: true\n", "enable_user_memories", "update_memory_on_run", "os.yaml:3"},
		{"culture removed", "agents:\n  - id: a\n    enable_agentic_culture: true\n", "enable_agentic_culture", "removed", "os.yaml:3"},
		{"culture manager removed", "agents:\n  - id: a\n    add_culture_to_context: true\n", "add_culture_to_context", "removed", "os.yaml:3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.yaml), "os.yaml")
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range []string{tt.old, tt.new, tt.line} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestParse_FreeFormMapsMayUseAnyKey(t *testing.T) {
	t.Parallel()
	cfg, err := Parse([]byte("agents:\n  - id: a\n    model: x:y\n    metadata:\n      reasoning: true\n      culture: x\n"), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Agents[0].Metadata["reasoning"] != true {
		t.Errorf("metadata = %v", cfg.Agents[0].Metadata)
	}
}

func TestValidate_RejectsBadValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, yaml, want string
	}{
		{"port too high", "server:\n  port: 70000\n", "server.port 70000"},
		{"negative port", "server:\n  port: -1\n", "server.port -1"},
		{"zero body limit", "server:\n  body_limit: 0\n", "body_limit"},
		{"negative timeout", "server:\n  idle_timeout: -1s\n", "idle_timeout"},
		{"bad cors origin", "server:\n  cors_origins: [localhost:3000]\n", "cors_origins"},
		{"empty dsn", "db:\n  dsn: ''\n", "db.dsn"},
		{"zero query timeout", "db:\n  query_timeout: 0s\n", "db.query_timeout must be positive"},
		{"negative query timeout", "db:\n  query_timeout: -1s\n", "db.query_timeout must be positive"},
		{"incomplete dsn", "db:\n  dsn: postgres://\n", "db.dsn (--db): invalid database DSN: postgres:// names no host"},
		{"empty agent id", "agents:\n  - name: x\n    model: a:b\n", "agents[0]: id is required"},
		{"duplicate agent ids", "agents:\n  - id: a\n    model: a:b\n  - id: a\n    model: a:b\n", "duplicate id \"a\""},
		{"id with slash", "agents:\n  - id: a/b\n    model: a:b\n", "may only use"},
		{"missing model", "agents:\n  - id: a\n", "agents[0].model is required"},
		{"unknown tool", "agents:\n  - id: a\n    model: a:b\n    tools: [web_serch]\n", "unknown tool \"web_serch\""},
		{"model without provider", "agents:\n  - id: a\n    model: gpt-4o\n", "provider:model_id"},
		{"negative history", "agents:\n  - id: a\n    model: a:b\n    num_history_runs: -1\n", "must not be negative"},
		{"unknown team member", "teams:\n  - id: t\n    members: [ghost]\n", "no agent or team with id \"ghost\""},
		{"duplicate team ids", "agents:\n  - id: a\n    model: a:b\nteams:\n  - id: t\n    members: [a]\n  - id: t\n    members: [a]\n", "duplicate id \"t\""},
		{"workflow step with both", "agents:\n  - id: a\n    model: a:b\nworkflows:\n  - id: w\n    steps:\n      - agent: a\n        team: a\n", "exactly one"},
		{"jwt without keys", "auth:\n  jwt:\n    algorithm: RS256\n", "verification_keys or jwks_file"},
		{"bad token source", "auth:\n  jwt:\n    verification_keys: [x]\n    token_source: query\n", "token_source"},
		{"algorithm and algorithms", "auth:\n  jwt:\n    verification_keys: [x]\n    algorithm: RS256\n    algorithms: [ES256]\n", "not both"},
		{"isolation without jwt", "user_isolation: true\nauth:\n  security_key: k\n", "user_isolation needs auth.jwt"},
		{"negative past sessions", "agents:\n  - id: a\n    model: a:b\n    num_past_sessions_to_search: -1\n", "num_past_sessions_to_search and num_past_session_runs_in_search must not be negative"},
		{"memory model without provider", "agents:\n  - id: a\n    model: a:b\n    memory_model: gpt-4o\n", "agents[0].memory_model \"gpt-4o\": use \"provider:model_id\""},
		{"team memory model without provider", "agents:\n  - id: a\n    model: a:b\nteams:\n  - id: t\n    members: [a]\n    memory_model: gpt-4o\n", "teams[0].memory_model \"gpt-4o\""},
		{"team negative past session runs", "agents:\n  - id: a\n    model: a:b\nteams:\n  - id: t\n    members: [a]\n    num_past_session_runs_in_search: -2\n", "teams[0]: num_past_sessions_to_search"},
		{"negative leeway", "auth:\n  jwt:\n    verification_keys: [x]\n    leeway: -1s\n", "leeway"},
		{"audience check without an audience", "auth:\n  jwt:\n    verification_keys: [x]\n    verify_audience: true\n", "verify_audience is true but no audience"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte(tt.yaml), "os.yaml")
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			err = cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want mention of %q", err, tt.want)
			}
		})
	}
}

func TestApplyEnv_OverridesFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "os.yaml")
	if err := os.WriteFile(path, []byte("server:\n  port: 8000\nauth:\n  security_key: from-file-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, env(map[string]string{
		"AGENTRY_HOST": "0.0.0.0", "AGENTRY_PORT": "9000", "AGENTRY_DB": "postgres://x/y",
		"AGENTRY_CORS_ORIGINS": "https://a.test, https://b.test", "AGENTRY_BODY_LIMIT": "1MiB",
		"AGENTRY_SHUTDOWN_TIMEOUT": "5s", "OS_SECURITY_KEY": "from-env-0123456789",
		"JWT_VERIFICATION_KEY": strings.Repeat("s", 40), "AGENTRY_USER_ISOLATION": "true",
	}))
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Server
	if s.Addr() != "0.0.0.0:9000" || cfg.DB.DSN != "postgres://x/y" || len(s.CORSOrigins) != 2 || s.CORSOrigins[1] != "https://b.test" ||
		s.BodyLimit != 1<<20 || s.ShutdownTimeout != 5*time.Second || cfg.Auth.SecurityKey != "from-env-0123456789" || !cfg.UserIsolation {
		t.Errorf("config = %+v", cfg)
	}
	if cfg.Auth.JWT == nil || len(cfg.Auth.JWT.VerificationKeys) != 1 || cfg.Auth.JWT.TokenSource != "header" {
		t.Errorf("jwt = %+v", cfg.Auth.JWT)
	}
}

func TestApplyEnv_RejectsBadValues(t *testing.T) {
	t.Parallel()
	tests := map[string]map[string]string{
		"renamed JWT_SECRET_KEY": {"JWT_SECRET_KEY": "x"},
		"port not a number":      {"AGENTRY_PORT": "http"},
		"bad size":               {"AGENTRY_BODY_LIMIT": "big"},
		"bad duration":           {"AGENTRY_SHUTDOWN_TIMEOUT": "1 minute"},
		"bad bool":               {"AGENTRY_USER_ISOLATION": "sure"},
	}
	for name, m := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg := Default()
			if err := cfg.ApplyEnv(env(m)); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestParseByteSize(t *testing.T) {
	t.Parallel()
	tests := map[string]int64{"0": 0, "1024": 1024, "1KiB": 1024, "2 MiB": 2 << 20, "1GB": 1e9, "10MB": 10e6, "5B": 5}
	for in, want := range tests {
		got, err := ParseByteSize(in)
		if err != nil || int64(got) != want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5MB", "MB", "9999999999999GiB"} {
		if _, err := ParseByteSize(in); err == nil {
			t.Errorf("ParseByteSize(%q) accepted", in)
		}
	}
}

func TestAuthenticator_BuildsFromKeysAndJWKSFile(t *testing.T) {
	t.Parallel()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	jwkPub, jwkPriv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	pemText := string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	j, err := jwkset.NewJWKFromKey(jwkPub, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: "from-jwks"}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{j.Marshal()}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "jwks.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	yml := "auth:\n  jwt:\n    algorithm: EdDSA\n    audience: agentry\n    jwks_file: jwks.json\n    verification_keys:\n      - kid: pem-key\n        key: |\n" +
		indent(pemText, "          ")
	path := filepath.Join(dir, "os.yaml")
	if err := os.WriteFile(path, []byte(yml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	a, err := cfg.Auth.Authenticator()
	if err != nil {
		t.Fatal(err)
	}
	mk := func(key ed25519.PrivateKey, kid, aud string) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"sub": "u", "aud": aud, "exp": time.Now().Add(time.Hour).Unix()})
		tok.Header["kid"] = kid
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for name, tok := range map[string]string{"pem key": mk(priv, "pem-key", "agentry"), "jwks key": mk(jwkPriv, "from-jwks", "agentry")} {
		if p, err := a.Authenticate(tok); err != nil || p.UserID != "u" {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := a.Authenticate(mk(priv, "pem-key", "other")); err == nil {
		t.Error("wrong audience accepted")
	}
	no := false
	cfg.Auth.JWT.VerifyAudience = &no
	a, err = cfg.Auth.Authenticator()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(mk(priv, "pem-key", "other")); err != nil {
		t.Errorf("verify_audience false still checks: %v", err)
	}
}

func TestAuthenticator_RejectsBadKeys(t *testing.T) {
	t.Parallel()
	tests := map[string]Auth{
		"short secret":            {JWT: &JWT{VerificationKeys: []VerificationKey{{Key: "short"}}}},
		"missing jwks file":       {JWT: &JWT{JWKSFile: filepath.Join(t.TempDir(), "none.json")}},
		"secret without HS":       {JWT: &JWT{VerificationKeys: []VerificationKey{{Key: strings.Repeat("k", 40)}}}},
		"unknown algorithm":       {JWT: &JWT{VerificationKeys: []VerificationKey{{Key: strings.Repeat("k", 40)}}, Algorithm: "HS1"}},
		"path taken for a secret": {JWT: &JWT{VerificationKeys: []VerificationKey{{Key: "/etc/agentry/keys/jwt-signing-secret"}}, Algorithm: "HS256"}},
		"missing key file":        {JWT: &JWT{VerificationKeys: []VerificationKey{{Key: filepath.Join(t.TempDir(), "jwt.pem")}}}},
	}
	for name, a := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := a.Authenticator(); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

// hsToken signs claims (plus a one-hour exp) with secret, setting kid when non-empty.
func hsToken(t *testing.T, secret, kid string, c jwt.MapClaims) string {
	t.Helper()
	if _, ok := c["exp"]; !ok {
		c["exp"] = time.Now().Add(time.Hour).Unix()
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAuthenticator_ReadsKeyFiles(t *testing.T) {
	t.Parallel()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "keys"), 0o700); err != nil {
		t.Fatal(err)
	}
	keyPath := filepath.Join(dir, "keys", "jwt.pem")
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "os.yaml")
	if err := os.WriteFile(cfgPath, []byte("auth:\n  jwt:\n    algorithm: EdDSA\n    verification_keys: [keys/jwt.pem]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, jwt.MapClaims{"sub": "u", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(priv)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		path string
		env  map[string]string
	}{
		"relative to the config file": {cfgPath, nil},
		"JWT_VERIFICATION_KEY path":   {"", map[string]string{"JWT_VERIFICATION_KEY": keyPath}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Load(tt.path, env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Auth.JWT.Algorithm = "EdDSA"
			a, err := cfg.Auth.Authenticator()
			if err != nil {
				t.Fatal(err)
			}
			if p, err := a.Authenticate(tok); err != nil || p.UserID != "u" {
				t.Errorf("token signed by the key file's key: %v", err)
			}
		})
	}
}

func TestLoad_ShortSecurityKeyIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name, file string
		env        map[string]string
		ok         bool
	}{
		{"short key in the file", "auth:\n  security_key: change-me\n", nil, false},
		{"short OS_SECURITY_KEY", "", map[string]string{"OS_SECURITY_KEY": "hunter2hunter2"}, false},
		{"short AGENTRY_SECURITY_KEY", "", map[string]string{"AGENTRY_SECURITY_KEY": "x"}, false},
		{"16 bytes", "", map[string]string{"OS_SECURITY_KEY": "0123456789abcdef"}, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			path := ""
			if tt.file != "" {
				path = filepath.Join(dir, fmt.Sprintf("os%d.yaml", i))
				if err := os.WriteFile(path, []byte(tt.file), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := Load(path, env(tt.env))
			if tt.ok {
				if err != nil {
					t.Fatal(err)
				}
				if a, err := cfg.Auth.Authenticator(); err != nil || !a.Enabled() {
					t.Fatalf("authenticator: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "security_key") || !strings.Contains(err.Error(), "16") {
				t.Fatalf("Load = %v, want an error naming security_key and the 16-byte minimum", err)
			}
			for _, key := range []string{"change-me", "hunter2hunter2"} {
				if strings.Contains(err.Error(), key) {
					t.Errorf("error %q contains the key", err)
				}
			}
		})
	}
}

func TestAuthenticator_LeewayZeroMeansNone(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("s3cr3t-", 6)
	expiredAgo := func(d time.Duration) string {
		return hsToken(t, secret, "", jwt.MapClaims{"sub": "u", "exp": time.Now().Add(-d).Unix()})
	}
	tests := []struct {
		name, leeway string
		accepted     map[time.Duration]bool
	}{
		{"unset is the 10s default", "", map[time.Duration]bool{3 * time.Second: true, 30 * time.Second: false}},
		{"0s is no leeway", "    leeway: 0s\n", map[time.Duration]bool{3 * time.Second: false}},
		{"1m", "    leeway: 1m\n", map[time.Duration]bool{30 * time.Second: true, 2 * time.Minute: false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := Parse([]byte("auth:\n  jwt:\n    algorithm: HS256\n    verification_keys: ["+secret+"]\n"+tt.leeway), "os.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			a, err := cfg.Auth.Authenticator()
			if err != nil {
				t.Fatal(err)
			}
			for ago, want := range tt.accepted {
				if _, err := a.Authenticate(expiredAgo(ago)); (err == nil) != want {
					t.Errorf("token expired %s ago: accepted=%v, want %v (%v)", ago, err == nil, want, err)
				}
			}
		})
	}
}

func TestAuthenticator_RequireKID(t *testing.T) {
	t.Parallel()
	secret := strings.Repeat("s3cr3t-", 6)
	build := func(t *testing.T, yml string) Config {
		t.Helper()
		cfg, err := Parse([]byte(yml), "os.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := build(t, "auth:\n  jwt:\n    algorithm: HS256\n    require_kid: true\n    verification_keys:\n      - kid: k1\n        key: "+secret+"\n")
	a, err := cfg.Auth.Authenticator()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(hsToken(t, secret, "k1", jwt.MapClaims{"sub": "u"})); err != nil {
		t.Errorf("token with kid rejected: %v", err)
	}
	if p, err := a.Authenticate(hsToken(t, secret, "", jwt.MapClaims{"sub": "u"})); err == nil {
		t.Errorf("kid-less token accepted with require_kid: %+v", p)
	}

	cfg = build(t, "auth:\n  jwt:\n    algorithm: HS256\n    require_kid: true\n    verification_keys: ["+secret+"]\n")
	if _, err := cfg.Auth.Authenticator(); err == nil || !strings.Contains(err.Error(), "kid") {
		t.Errorf("require_kid with a kid-less key: %v, want an error about the missing kid", err)
	}
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}

func FuzzParse(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "agentos.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte("agents:\n  - id: a\n    enable_user_memories: true\n"))
	f.Add([]byte("auth:\n  jwt:\n    verification_keys:\n      - kid: a\n        key: b\n"))
	f.Add([]byte("server: [1, 2\n"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz.yaml")
		if err == nil {
			_ = cfg.Validate()
		}
	})
}

// TestLoad_ExampleAgentsBuild builds every agent of the example from another
// working directory than the repository root: the scripted model's file is
// found relative to the config file (no t.Parallel: it sets the environment).
func TestLoad_ExampleAgentsBuild(t *testing.T) {
	// Providers check for a key when built; no request is sent here.
	t.Setenv("OPENAI_API_KEY", "test-key")
	t.Setenv("ANTHROPIC_API_KEY", "test-key")
	cfg, err := Load(filepath.Join("..", "..", "examples", "agentos.yaml"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.Agents {
		built, err := a.Build(nil)
		if err != nil {
			t.Errorf("agent %s: %v", a.ID, err)
			continue
		}
		if built.ID() != a.ID {
			t.Errorf("built id %q, want %q", built.ID(), a.ID)
		}
	}
}

func TestTracing_ParsesAndValidates(t *testing.T) {
	t.Parallel()
	c, err := Parse([]byte("tracing:\n  store: true\n  retention_days: 7\n  queue_size: 100\n"), "c.yaml")
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		t.Fatal(err)
	}
	if !c.Tracing.Store || c.Tracing.Retention() != 7*24*time.Hour || c.Tracing.QueueSize != 100 || c.Tracing.ContentOmitted() {
		t.Fatalf("%+v", c.Tracing)
	}
	for text, omitted := range map[string]bool{"tracing:\n  capture_content: false\n": true, "tracing:\n  capture_content: true\n  max_content_bytes: 64\n": false} {
		c, err := Parse([]byte(text), "c.yaml")
		if err == nil {
			err = c.Validate()
		}
		if err != nil || c.Tracing.ContentOmitted() != omitted {
			t.Errorf("%q: omitted %v, %v", text, c.Tracing.ContentOmitted(), err)
		}
	}
	for _, bad := range []string{"tracing:\n  retention_days: 7\n", "tracing:\n  store: true\n  retention_days: -1\n",
		"tracing:\n  store: true\n  queue_size: -5\n", "tracing:\n  store: true\n  keep: forever\n",
		"tracing:\n  max_content_bytes: -1\n", "tracing:\n  capture_content: false\n  max_content_bytes: 100\n"} {
		c, err := Parse([]byte(bad), "c.yaml")
		if err == nil {
			err = c.Validate()
		}
		if err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
