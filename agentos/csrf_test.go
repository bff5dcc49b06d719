package agentos

import (
	"net/http"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/db"
)

// TestCookieAuth_CrossSiteRequestsAreRefused is the cross-site form POST from
// issue 7: with the token in a cookie, a page on another origin could run an
// agent as the signed-in user. A state-changing request authenticated by the
// cookie needs an allowed Origin or the CSRF header; header tokens and safe
// methods are unaffected.
func TestCookieAuth_CrossSiteRequestsAreRefused(t *testing.T) {
	t.Parallel()
	const app = "https://app.example"
	f := newRunsFixture(t, Config{CORSOrigins: []string{app},
		Auth: Auth{Authenticator: jwtAuthenticator(t, ""), TokenSource: TokenFromBoth}})
	tok := hsToken(t, jwt.MapClaims{"sub": "alice"})
	cookie := "access_token=" + tok
	run := func(hdr map[string]string) response {
		body, h := form(map[string]string{"message": "hi", "stream": "false"})
		for k, v := range hdr {
			h[k] = v
		}
		return do(t, http.MethodPost, f.url+"/agents/echo/runs", body, h)
	}

	refused := []struct {
		name string
		hdr  map[string]string
	}{
		{"cross-origin form POST", map[string]string{"Cookie": cookie, "Origin": "https://evil.example"}},
		{"opaque origin", map[string]string{"Cookie": cookie, "Origin": "null"}},
		{"no Origin and no CSRF header", map[string]string{"Cookie": cookie}},
		{"look-alike origin", map[string]string{"Cookie": cookie, "Origin": app + ".evil.example"}},
		{"empty CSRF header", map[string]string{"Cookie": cookie, "Origin": "https://evil.example", CSRFHeader: ""}},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			res := run(tt.hdr)
			if res.status != http.StatusForbidden || !strings.Contains(res.detail(t), CSRFHeader) {
				t.Fatalf("= %d %s, want 403 naming %s", res.status, res.body, CSRFHeader)
			}
		})
	}
	t.Run("refused DELETE", func(t *testing.T) {
		res := do(t, http.MethodDelete, f.url+"/sessions/s1", nil, map[string]string{"Cookie": cookie, "Origin": "https://evil.example"})
		if res.status != http.StatusForbidden {
			t.Fatalf("= %d %s, want 403", res.status, res.body)
		}
	})
	if n := countRuns(t, f.db, db.RunFilter{}); n != 0 {
		t.Fatalf("%d runs stored by refused cross-site requests", n)
	}
	if msgs := f.echo.lastMessages(); len(msgs) != 0 {
		t.Fatalf("the model was called: %v", msgs)
	}

	allowed := []struct {
		name string
		hdr  map[string]string
	}{
		{"allowed Origin", map[string]string{"Cookie": cookie, "Origin": app}},
		{"CSRF header without Origin", map[string]string{"Cookie": cookie, CSRFHeader: "1"}},
		{"bearer header from another origin", map[string]string{"Authorization": "Bearer " + tok, "Origin": "https://evil.example"}},
	}
	for _, tt := range allowed {
		t.Run(tt.name, func(t *testing.T) {
			if res := run(tt.hdr); res.status != http.StatusOK {
				t.Fatalf("= %d %s, want 200", res.status, res.body)
			}
		})
	}
	t.Run("safe method with the cookie from another origin", func(t *testing.T) {
		res := get(t, f.url+"/sessions?limit=5", map[string]string{"Cookie": cookie, "Origin": "https://evil.example"})
		if res.status != http.StatusOK {
			t.Fatalf("= %d %s, want 200", res.status, res.body)
		}
	})
}

func TestCookieAuth_AnyOriginIsRefusedAtStart(t *testing.T) {
	t.Parallel()
	for _, src := range []TokenSource{TokenFromCookie, TokenFromBoth} {
		_, err := New(Config{CORSOrigins: []string{"*"}, Auth: Auth{Authenticator: jwtAuthenticator(t, ""), TokenSource: src}})
		if err == nil || !strings.Contains(err.Error(), "cors") {
			t.Errorf("token source %s with CORS \"*\": %v, want an error about cors origins", src, err)
		}
	}
	if _, err := New(Config{CORSOrigins: []string{"*"}, Auth: Auth{Authenticator: jwtAuthenticator(t, ""), TokenSource: TokenFromHeader}}); err != nil {
		t.Errorf("header tokens with CORS \"*\": %v", err)
	}
}
