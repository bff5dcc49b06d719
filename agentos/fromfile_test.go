package agentos

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/agentos/config"
)

func TestFromFile_ExampleConfigBuildsAServer(t *testing.T) {
	t.Parallel()
	f, err := config.Load(filepath.Join("..", "examples", "agentos.yaml"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := FromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Addr != "127.0.0.1:7777" || cfg.BodyLimit != 32<<20 || len(cfg.CORSOrigins) != 2 || cfg.Auth.Authenticator.Enabled() {
		t.Errorf("cfg = %+v", cfg)
	}
	if _, err := New(cfg); err != nil {
		t.Fatal(err)
	}
}

func TestFromFile_JWTSettingsReachTheMiddleware(t *testing.T) {
	t.Parallel()
	yml := "auth:\n  jwt:\n    verification_keys: [\"" + testSecret + "\"]\n    algorithm: HS256\n    token_source: cookie\n    cookie_name: tok\n    excluded_route_paths: [/health, /open]\nuser_isolation: true\n"
	f, err := config.Parse([]byte(yml), "os.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := FromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, cfg, whoami)
	tok := hsToken(t, jwt.MapClaims{"sub": "carol"})
	if res := get(t, ts.URL+"/whoami", map[string]string{"Cookie": "tok=" + tok}); res.status != 200 || !strings.Contains(res.body, `"scope":"carol"`) {
		t.Errorf("cookie auth = %d %s", res.status, res.body)
	}
	if res := get(t, ts.URL+"/whoami", bearer(tok)); res.status != 401 {
		t.Errorf("header token with cookie source = %d", res.status)
	}
	if res := get(t, ts.URL+"/open", nil); res.status != 404 {
		t.Errorf("excluded path = %d, want 404 (unauthenticated, no route)", res.status)
	}
}
