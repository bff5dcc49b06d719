package agentos

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/agentos/auth"
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

// TestFromFile_KeyPathNeverBecomesAnHMACSecret is the attack from issue 7: a
// verification_keys entry meant as a file path was taken for an HMAC secret,
// so anyone who knew the path could sign admin tokens with it.
func TestFromFile_KeyPathNeverBecomesAnHMACSecret(t *testing.T) {
	t.Parallel()
	priv := isolationKey()
	der, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	existing := filepath.Join(dir, "keys", "jwt-verification-public.pem")
	if err := os.MkdirAll(filepath.Dir(existing), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(existing, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "keys", "jwt-verification-typo.pem")
	forge := func(secret string) string {
		tok, err := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{
			"sub": "mallory", "scopes": []string{auth.AdminScope}, "exp": time.Now().Add(time.Hour).Unix(),
		}).SignedString([]byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	load := func(path string) config.Config {
		t.Helper()
		yml := "auth:\n  jwt:\n    algorithms: [RS256, HS256]\n    verification_keys: [\"" + path + "\"]\nuser_isolation: true\n"
		f, err := config.Parse([]byte(yml), "os.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Validate(); err != nil {
			t.Fatal(err)
		}
		return f
	}

	t.Run("missing file fails at start naming it", func(t *testing.T) {
		f := load(missing)
		cfg, err := FromFile(f)
		if err == nil {
			ts, _ := testServer(t, cfg, whoami)
			res := get(t, ts.URL+"/whoami", bearer(forge(missing)))
			t.Fatalf("started with the path as an HMAC secret; forged admin token = %d %s", res.status, res.body)
		}
		if !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "verification_keys[0]") {
			t.Errorf("error %q does not name the entry and its path", err)
		}
	})
	t.Run("readable file is read as the key", func(t *testing.T) {
		f := load(existing)
		cfg, err := FromFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ts, _ := testServer(t, cfg, whoami)
		if res := get(t, ts.URL+"/whoami", bearer(forge(existing))); res.status != 401 {
			t.Errorf("token signed with the path string = %d %s, want 401", res.status, res.body)
		}
		if res := get(t, ts.URL+"/whoami", bearer(rsToken(t, "alice"))); res.status != 200 || !strings.Contains(res.body, `"user":"alice"`) {
			t.Errorf("token signed by the file's key = %d %s, want 200 as alice", res.status, res.body)
		}
	})
}
