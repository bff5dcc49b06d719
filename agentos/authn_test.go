package agentos

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
)

const testSecret = "agentos-test-secret-0123456789-abcdef"

func hsToken(t *testing.T, c jwt.MapClaims) string {
	t.Helper()
	if _, ok := c["exp"]; !ok {
		c["exp"] = time.Now().Add(time.Hour).Unix()
	}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, c).SignedString([]byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func jwtAuthenticator(t *testing.T, securityKey string) *auth.Authenticator {
	t.Helper()
	k, err := auth.ParseKey("", testSecret)
	if err != nil {
		t.Fatal(err)
	}
	v, err := auth.NewJWTVerifier(auth.JWTConfig{Keys: []auth.Key{k}, Algorithms: []string{"HS256"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := auth.NewAuthenticator(securityKey, v)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// whoami reports the principal and db scope the handler sees.
func whoami(s *Server) {
	s.router.Get("/whoami", func(w http.ResponseWriter, r *http.Request) {
		p, _ := auth.FromContext(r.Context())
		scope, scoped := db.UserScope(r.Context())
		out := map[string]any{"scoped": scoped, "scope": scope, "effective": actAs(r.Context(), r.URL.Query().Get("user_id")).id}
		if p != nil {
			out["user"] = p.UserID
			out["admin"] = p.Admin
		}
		writeJSON(w, 200, out)
	})
}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

func TestAuth_SecurityKey(t *testing.T) {
	t.Parallel()
	a, err := auth.NewAuthenticator("the-os-key-0123456789", nil)
	if err != nil {
		t.Fatal(err)
	}
	ts, logs := testServer(t, Config{Auth: Auth{Authenticator: a}}, whoami)
	tests := []struct {
		name   string
		header map[string]string
		path   string
		status int
		detail string
	}{
		{"missing header", nil, "/whoami", 401, "Authorization header required"},
		{"wrong key", bearer("not-the-key"), "/whoami", 401, "Invalid authentication token"},
		{"basic scheme", map[string]string{"Authorization": "Basic the-os-key-0123456789"}, "/whoami", 401, "Invalid authorization header format"},
		{"bearer without token", map[string]string{"Authorization": "Bearer "}, "/whoami", 401, "Invalid authorization header format"},
		{"right key", bearer("the-os-key-0123456789"), "/whoami", 200, ""},
		{"lower-case scheme", map[string]string{"Authorization": "bearer the-os-key-0123456789"}, "/whoami", 200, ""},
		{"health is excluded", nil, "/health", 200, ""},
		{"readiness is excluded", nil, "/health/ready", 200, ""},
		{"unknown route still needs auth", nil, "/nope", 401, "Authorization header required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := get(t, ts.URL+tt.path, tt.header)
			if res.status != tt.status {
				t.Fatalf("status %d %s, want %d", res.status, res.body, tt.status)
			}
			if tt.detail != "" && res.detail(t) != tt.detail {
				t.Errorf("detail = %q, want %q", res.detail(t), tt.detail)
			}
			// RFC 6750 §3.1: no error code without credentials, invalid_token for a bad one.
			want := "Bearer"
			if tt.detail == "Invalid authentication token" {
				want = `Bearer error="invalid_token", error_description="The access token is invalid"`
			}
			if tt.status == 401 && res.header.Get("WWW-Authenticate") != want {
				t.Errorf("WWW-Authenticate = %q, want %q", res.header.Get("WWW-Authenticate"), want)
			}
		})
	}
	t.Cleanup(func() {
		if strings.Contains(logs.String(), "the-os-key-0123456789") || strings.Contains(logs.String(), "not-the-key") {
			t.Error("logs contain a key")
		}
	})
}

func TestAuth_JWTSources(t *testing.T) {
	t.Parallel()
	tok := hsToken(t, jwt.MapClaims{"sub": "alice"})
	expired := hsToken(t, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(-time.Hour).Unix()})
	cookie := func(v string) map[string]string { return map[string]string{"Cookie": "access_token=" + v} }
	tests := []struct {
		name   string
		source TokenSource
		header map[string]string
		status int
		detail string
	}{
		{"header token", TokenFromHeader, bearer(tok), 200, ""},
		{"header source ignores cookie", TokenFromHeader, cookie(tok), 401, "Authorization header required"},
		{"cookie token", TokenFromCookie, cookie(tok), 200, ""},
		{"cookie source ignores header", TokenFromCookie, bearer(tok), 401, "Authentication cookie required"},
		{"both: header", TokenFromBoth, bearer(tok), 200, ""},
		{"both: cookie", TokenFromBoth, cookie(tok), 200, ""},
		{"both: neither", TokenFromBoth, nil, 401, "Authorization header required"},
		{"expired token", TokenFromHeader, bearer(expired), 401, "Token has expired"},
		{"garbage token", TokenFromHeader, bearer("a.b.c"), 401, "Invalid authentication token"},
		{"oversized token", TokenFromHeader, bearer(strings.Repeat("x", 20000)), 401, "Invalid authentication token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts, logs := testServer(t, Config{Auth: Auth{Authenticator: jwtAuthenticator(t, ""), TokenSource: tt.source}}, whoami)
			res := get(t, ts.URL+"/whoami", tt.header)
			if res.status != tt.status {
				t.Fatalf("status %d %s, want %d", res.status, res.body, tt.status)
			}
			if tt.detail != "" && res.detail(t) != tt.detail {
				t.Errorf("detail = %q, want %q", res.detail(t), tt.detail)
			}
			if tt.status == 200 && !strings.Contains(res.body, `"user":"alice"`) {
				t.Errorf("principal not in context: %s", res.body)
			}
			if strings.Contains(logs.String(), tok[20:]) || strings.Contains(logs.String(), expired[20:]) {
				t.Error("logs contain the token")
			}
		})
	}
}

func TestAuth_ExcludedPathPatterns(t *testing.T) {
	t.Parallel()
	ts, _ := testServer(t, Config{Auth: Auth{Authenticator: jwtAuthenticator(t, ""), ExcludedPaths: []string{"/health", "/public/*"}}},
		func(s *Server) {
			s.router.Get("/public/info", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]bool{"ok": true}) })
		})
	for path, want := range map[string]int{"/health": 200, "/public/info": 200, "/publicity": 401, "/whoami": 401} {
		if got := get(t, ts.URL+path, nil).status; got != want {
			t.Errorf("GET %s = %d, want %d", path, got, want)
		}
	}
}

func TestUserIsolation_ScopesNonAdminCallers(t *testing.T) {
	t.Parallel()
	ts, _ := testServer(t, Config{UserIsolation: true, Auth: Auth{Authenticator: jwtAuthenticator(t, "os-key-0123456789abcdef")}}, whoami)
	tests := []struct {
		name   string
		token  string
		status int
		want   []string
	}{
		{"user is scoped to sub and cannot widen it", hsToken(t, jwt.MapClaims{"sub": "alice"}), 200,
			[]string{`"scoped":true`, `"scope":"alice"`, `"effective":"alice"`}},
		{"admin scope is not scoped", hsToken(t, jwt.MapClaims{"sub": "root", "scopes": auth.AdminScope}), 200,
			[]string{`"scoped":false`, `"effective":"bob"`, `"admin":true`}},
		{"security key is admin", "os-key-0123456789abcdef", 200, []string{`"scoped":false`, `"effective":"bob"`}},
		{"token without sub is refused", hsToken(t, jwt.MapClaims{"scopes": "agents:read"}), 401, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := get(t, ts.URL+"/whoami?user_id=bob", bearer(tt.token))
			if res.status != tt.status || !contains(res.body, tt.want...) {
				t.Fatalf("= %d %s, want %d with %v", res.status, res.body, tt.status, tt.want)
			}
		})
	}
	if _, err := New(Config{UserIsolation: true}); err == nil {
		t.Error("user isolation without authentication accepted")
	}
}

// TestAuth_TokenWithoutSubjectIs401 checks that a verified token naming no
// user is an invalid token (RFC 6750 §3.1), with or without user isolation,
// and never reaches a handler.
func TestAuth_TokenWithoutSubjectIs401(t *testing.T) {
	t.Parallel()
	tokens := map[string]string{
		"no sub":              hsToken(t, jwt.MapClaims{"scopes": "agents:read"}),
		"empty sub":           hsToken(t, jwt.MapClaims{"sub": ""}),
		"whitespace-only sub": hsToken(t, jwt.MapClaims{"sub": " \t "}),
		"admin without sub":   hsToken(t, jwt.MapClaims{"scopes": auth.AdminScope}),
	}
	for _, isolation := range []bool{false, true} {
		ts, logs := testServer(t, Config{UserIsolation: isolation, Auth: Auth{Authenticator: jwtAuthenticator(t, "")}}, whoami)
		for name, tok := range tokens {
			t.Run(fmt.Sprintf("%s isolation=%v", name, isolation), func(t *testing.T) {
				t.Parallel()
				res := get(t, ts.URL+"/whoami", bearer(tok))
				if res.status != 401 {
					t.Fatalf("status %d %s, want 401", res.status, res.body)
				}
				if got := res.header.Get("WWW-Authenticate"); !strings.HasPrefix(got, `Bearer error="invalid_token"`) {
					t.Errorf("WWW-Authenticate = %q, want Bearer error=\"invalid_token\"", got)
				}
				if d := res.detail(t); d != "Token has no subject" {
					t.Errorf("detail = %q", d)
				}
				if strings.Contains(logs.String(), tok[20:]) {
					t.Error("logs contain the token")
				}
			})
		}
	}
}

func TestRequireScope_Enforces403(t *testing.T) {
	t.Parallel()
	mount := func(s *Server) {
		ok := func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]bool{"ok": true}) }
		s.router.With(s.requireScope("agents", "read", "")).Get("/agents", ok)
		s.router.With(s.requireScope("agents", "run", "id")).Post("/agents/{id}/runs", ok)
	}
	enforced, _ := testServer(t, Config{Auth: Auth{Authenticator: jwtAuthenticator(t, ""), Authorization: true}}, mount)
	lax, _ := testServer(t, Config{Auth: Auth{Authenticator: jwtAuthenticator(t, "")}}, mount)
	tok := func(scopes any) string { return hsToken(t, jwt.MapClaims{"sub": "u", "scopes": scopes}) }
	tests := []struct {
		name         string
		url          string
		method, path string
		token        string
		status       int
	}{
		{"read scope lists", enforced.URL, "GET", "/agents", tok("agents:read"), 200},
		{"no scope is 403", enforced.URL, "GET", "/agents", tok([]string{}), 403},
		{"per-agent scope runs that agent", enforced.URL, "POST", "/agents/a1/runs", tok("agents:a1:run"), 200},
		{"per-agent scope does not run another", enforced.URL, "POST", "/agents/a2/runs", tok("agents:a1:run"), 403},
		{"wildcard runs any agent", enforced.URL, "POST", "/agents/a2/runs", tok("agents:*"), 200},
		{"admin runs any agent", enforced.URL, "POST", "/agents/a2/runs", tok(auth.AdminScope), 200},
		{"authorization off allows all", lax.URL, "POST", "/agents/a2/runs", tok([]string{}), 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := do(t, tt.method, tt.url+tt.path, nil, bearer(tt.token))
			if res.status != tt.status {
				t.Fatalf("= %d %s, want %d", res.status, res.body, tt.status)
			}
			if tt.status == 403 {
				res.detail(t)
			}
		})
	}
}

// TestActAs_OneRule: a scoped caller acts as its scope's user whatever
// user_id it names; an unscoped one acts as the user_id it names, or for
// every user when it names none.
func TestActAs_OneRule(t *testing.T) {
	t.Parallel()
	open, alice := context.Background(), db.WithUserScope(context.Background(), "alice")
	for _, c := range []struct {
		name      string
		ctx       context.Context
		requested string
		id        string
		owns      map[string]bool
		scope     string // "" means the scoped context is unscoped
	}{
		{"unscoped naming no one", open, "", "", map[string]bool{"alice": true, "bob": true, "": true}, ""},
		{"unscoped naming bob", open, "bob", "bob", map[string]bool{"alice": false, "bob": true, "": false}, "bob"},
		{"scoped naming no one", alice, "", "alice", map[string]bool{"alice": true, "bob": false, "": false}, "alice"},
		{"scoped naming bob", alice, "bob", "alice", map[string]bool{"alice": true, "bob": false, "": false}, "alice"},
	} {
		u := actAs(c.ctx, c.requested)
		if u.id != c.id {
			t.Errorf("%s: acts as %q, want %q", c.name, u.id, c.id)
		}
		for owner, want := range c.owns {
			if got := u.owns(owner); got != want {
				t.Errorf("%s: owns(%q) = %v, want %v", c.name, owner, got, want)
			}
		}
		got, scoped := db.UserScope(u.scope(c.ctx))
		if got != c.scope || scoped != (c.scope != "") {
			t.Errorf("%s: scope = %q (%v), want %q", c.name, got, scoped, c.scope)
		}
	}
}

// TestAuth_ExcludedPathTrailingSlash checks that an excluded path is excluded
// with trailing slashes too (as Agno matches the path without them), and
// that nothing else escapes authentication on that account: a longer path,
// a path below an excluded one, dot segments and escaped slashes still need
// a token.
func TestAuth_ExcludedPathTrailingSlash(t *testing.T) {
	t.Parallel()
	ts, _ := testServer(t, Config{Auth: Auth{Authenticator: jwtAuthenticator(t, "")}}, func(s *Server) {
		whoami(s)
		s.router.Get("/health/secret", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]bool{"secret": true}) })
	})
	for path, want := range map[string]int{
		"/health": 200, "/health/ready": 200,
		// Excluded, and not routed (chi does not strip slashes): 404, not 401.
		"/health/": 404, "/health//": 404, "/health/ready/": 404, "/health%2F": 404,
		"/healthz": 401, "/healthz/": 401, "/health/secret": 401, "/health/secret/": 401,
		"/health/../whoami": 401, "/health/%2E%2E/whoami": 401, "/health%2F..%2Fwhoami": 401,
		"/whoami": 401, "/whoami/": 401, "//health": 401, "/": 401,
	} {
		res := get(t, ts.URL+path, nil)
		if res.status != want {
			t.Errorf("GET %s = %d %s, want %d", path, res.status, res.body, want)
		}
		if want != 401 && strings.Contains(res.body, "secret") {
			t.Errorf("GET %s reached a protected handler: %s", path, res.body)
		}
	}
}

// TestExcluded_EmptyPatternExcludesNothing: "/" without its slash is "", so
// an empty pattern (a config slip) must not exclude the root.
func TestExcluded_EmptyPatternExcludesNothing(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/", "//"} {
		if excluded([]string{""}, path) {
			t.Errorf("pattern \"\" excludes %q", path)
		}
	}
	if !excluded([]string{"/"}, "/") || excluded([]string{"/"}, "/x") {
		t.Error(`pattern "/" must match "/" only`)
	}
}
