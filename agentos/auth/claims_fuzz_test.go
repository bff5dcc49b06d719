package auth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/internal/wirecheck"
)

// FuzzVerifyClaims signs any payload (and header) with a trusted key, so
// that claim parsing is reached: a token is either refused with
// ErrInvalidToken, its error not echoing it, or accepted with a storable
// subject, an exp not passed, no nbf or iat in the future, and admin rights
// exactly when AdminScope was granted.
func FuzzVerifyClaims(f *testing.F) {
	k := keys(f)
	v := mainVerifier(f)
	header := `{"alg":"HS256","kid":"hs","typ":"JWT"}`
	for _, c := range []jwt.MapClaims{
		claims(), claims("scopes", "agents:read agent_os:admin"), claims("scopes", []any{"a", 1}),
		claims("nbf", 1e19), claims("iat", -1e300), claims("exp", "soon"), claims("sub", 7), claims("aud", []any{"x", "agentry"}),
		claims("sid", "s-1"), claims("sub", " "),
	} {
		raw, err := json.Marshal(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(header, string(raw))
	}
	f.Add(header, `{"sub":"u","exp":1e400}`)
	f.Add(`{"alg":"HS256","crit":["b64"]}`, `{}`)
	f.Fuzz(func(t *testing.T, hdr, payload string) {
		signing := base64.RawURLEncoding.EncodeToString([]byte(hdr)) + "." + base64.RawURLEncoding.EncodeToString([]byte(payload))
		sig, err := jwt.SigningMethodHS256.Sign(signing, k.secret)
		if err != nil {
			t.Fatal(err)
		}
		token := signing + "." + base64.RawURLEncoding.EncodeToString(sig)
		p, err := v.Verify(token)
		if err != nil {
			if !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("error %v does not wrap ErrInvalidToken", err)
			}
			if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), signing) {
				t.Fatalf("error %q echoes the token", err)
			}
			return
		}
		if strings.TrimSpace(p.UserID) == "" || wirecheck.CheckID("user_id", p.UserID) != nil || strings.HasSuffix(p.UserID, " ") {
			t.Fatalf("accepted user id %q", p.UserID)
		}
		if p.Admin != slices.Contains(p.Scopes, AdminScope) {
			t.Fatalf("admin %v with scopes %q", p.Admin, p.Scopes)
		}
		leeway := v.cfg.Leeway.Seconds()
		now := float64(testNow.Unix())
		exp, ok := p.Claims["exp"].(float64)
		if !ok || exp < now-leeway-1 {
			t.Fatalf("accepted exp %v at %v", p.Claims["exp"], now)
		}
		for _, name := range []string{"nbf", "iat"} {
			if d, ok := p.Claims[name].(float64); ok && d > now+leeway+1 {
				t.Fatalf("accepted %s %v at %v", name, d, now)
			}
		}
	})
}
