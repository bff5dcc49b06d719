package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

// mainVerifier trusts one key of every family, each with an id.
func mainVerifier(t testing.TB) *JWTVerifier {
	t.Helper()
	k := keys(t)
	v, err := NewJWTVerifier(JWTConfig{
		Keys: []Key{
			mustKey(t, "rsa-a", publicPEM(t, &k.rsaA.PublicKey)),
			mustKey(t, "ec", publicPEM(t, &k.ec.PublicKey)),
			mustKey(t, "ed", publicPEM(t, k.ed.Public())),
			mustKey(t, "hs", string(k.secret)),
		},
		Algorithms:     []string{"RS256", "ES256", "EdDSA", "HS256"},
		Audience:       []string{"agentry"},
		Issuer:         "https://issuer.test",
		SessionIDClaim: "sid",
		Now:            func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestVerify_RejectsBadTokens(t *testing.T) {
	t.Parallel()
	k := keys(t)
	valid := sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims())
	parts := strings.Split(valid, ".")
	otherEC, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	unsigned := func(alg string) string {
		return b64(map[string]string{"alg": alg, "typ": "JWT"}) + "." + b64(claims()) + "."
	}
	flip := func(s string) string {
		c := s[0]
		if c == 'A' {
			c = 'B'
		} else {
			c = 'A'
		}
		return string(c) + s[1:]
	}
	rsaPEM := []byte(publicPEM(t, &k.rsaA.PublicKey))

	tests := []struct {
		name  string
		token string
	}{
		{"alg none", unsigned("none")},
		{"alg None", unsigned("None")},
		{"alg NONE", unsigned("NONE")},
		{"alg nOnE", unsigned("nOnE")},
		{"alg none with a signature", unsigned("none") + "c2ln"},
		{"HS256 signed with the RSA public key PEM as secret", sign(t, jwt.SigningMethodHS256, rsaPEM, "rsa-a", claims())},
		{"HS256 with the RSA PEM and no kid", sign(t, jwt.SigningMethodHS256, rsaPEM, "", claims())},
		{"wrong kid", sign(t, jwt.SigningMethodRS256, k.rsaA, "no-such-kid", claims())},
		{"kid of another key", sign(t, jwt.SigningMethodRS256, k.rsaA, "ed", claims())},
		{"non-string kid", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims())
			tok.Header["kid"] = 7
			s, _ := tok.SignedString(k.rsaA)
			return s
		}()},
		{"expired", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("exp", testNow.Add(-time.Minute).Unix()))},
		{"expired just past leeway", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("exp", testNow.Add(-11*time.Second).Unix()))},
		{"future nbf", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("nbf", testNow.Add(time.Minute).Unix()))},
		{"iat in the future beyond leeway", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("iat", testNow.Add(time.Minute).Unix()))},
		{"wrong aud", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("aud", "someone-else"))},
		{"missing aud", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("aud", nil))},
		{"wrong iss", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("iss", "https://evil.test"))},
		{"missing exp", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("exp", nil))},
		{"tampered payload", parts[0] + "." + b64(claims("sub", "admin", "scopes", []string{AdminScope})) + "." + parts[2]},
		{"tampered signature", parts[0] + "." + parts[1] + "." + flip(parts[2])},
		{"signature removed", parts[0] + "." + parts[1] + "."},
		{"one segment", parts[0]},
		{"two segments", parts[0] + "." + parts[1]},
		{"four segments", valid + "." + parts[2]},
		{"bad base64", "!!!." + parts[1] + "." + parts[2]},
		{"padded base64 header", parts[0] + "==." + parts[1] + "." + parts[2]},
		{"non-JSON header", b64("not json") + "." + parts[1] + "." + parts[2]},
		{"non-JSON payload", parts[0] + "." + b64("not json") + "." + parts[2]},
		{"empty", ""},
		{"1 MB token", parts[0] + "." + strings.Repeat("A", 1<<20) + "." + parts[2]},
		{"exp as string", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("exp", "99999999999"))},
		{"nbf as bool", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("nbf", true))},
		{"aud as number", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("aud", 5))},
		{"scopes as number", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("scopes", 42))},
		{"scopes array with a number", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("scopes", []any{"agents:read", 1}))},
		{"sub as object", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("sub", map[string]any{"id": "x"}))},
		{"session id claim as number", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("sid", 12))},
		{"disallowed alg RS512", sign(t, jwt.SigningMethodRS512, k.rsaA, "rsa-a", claims())},
		{"disallowed alg PS256", sign(t, jwt.SigningMethodPS256, k.rsaA, "rsa-a", claims())},
		{"ES256 verified against the RSA key", sign(t, jwt.SigningMethodES256, otherEC, "rsa-a", claims())},
		{"ES256 signed by an unknown key", sign(t, jwt.SigningMethodES256, otherEC, "", claims())},
		{"RS256 signed by an unknown key", sign(t, jwt.SigningMethodRS256, k.rsaUnknown, "", claims())},
		{"RS256 unknown key claiming a known kid", sign(t, jwt.SigningMethodRS256, k.rsaUnknown, "rsa-a", claims())},
		{"HS256 with a wrong secret", sign(t, jwt.SigningMethodHS256, []byte("another-secret-that-is-long-enough-32"), "hs", claims())},
		{"crit header", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims())
			tok.Header["kid"] = "rsa-a"
			tok.Header["crit"] = []string{"exp"}
			s, _ := tok.SignedString(k.rsaA)
			return s
		}()},
	}
	v := mainVerifier(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := v.Verify(tt.token)
			if err == nil {
				t.Fatalf("Verify accepted a bad token: principal %+v", p)
			}
			if !errors.Is(err, ErrInvalidToken) {
				t.Errorf("error %v does not wrap ErrInvalidToken", err)
			}
			if len(tt.token) > 20 && strings.Contains(err.Error(), tt.token) {
				t.Errorf("error message echoes the token")
			}
		})
	}
	if len(tests) < 20 {
		t.Fatalf("want at least 20 bad tokens, have %d", len(tests))
	}
}

func TestVerify_RejectsHS256WithPublicKeyWhenOnlyRSAConfigured(t *testing.T) {
	t.Parallel()
	k := keys(t)
	pemText := publicPEM(t, &k.rsaA.PublicKey)
	v, err := NewJWTVerifier(JWTConfig{
		Keys:       []Key{mustKey(t, "", pemText)},
		Algorithms: []string{"RS256", "HS256"},
		Now:        func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range [][]byte{[]byte(pemText), []byte(strings.TrimSpace(pemText))} {
		if _, err := v.Verify(sign(t, jwt.SigningMethodHS256, secret, "", claims())); err == nil {
			t.Fatal("HS256 token keyed with the RSA public key was accepted")
		}
	}
}

func TestVerify_AcceptsValidTokens(t *testing.T) {
	t.Parallel()
	k := keys(t)
	tests := []struct {
		name  string
		token string
	}{
		{"RS256 with kid", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims())},
		{"RS256 without kid", sign(t, jwt.SigningMethodRS256, k.rsaA, "", claims())},
		{"ES256", sign(t, jwt.SigningMethodES256, k.ec, "ec", claims())},
		{"EdDSA", sign(t, jwt.SigningMethodEdDSA, k.ed, "ed", claims())},
		{"HS256 with secret", sign(t, jwt.SigningMethodHS256, k.secret, "hs", claims())},
		{"HS256 without kid", sign(t, jwt.SigningMethodHS256, k.secret, "", claims())},
		{"exp inside leeway", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("exp", testNow.Add(-9*time.Second).Unix()))},
		{"nbf inside leeway", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("nbf", testNow.Add(9*time.Second).Unix()))},
		{"iat inside leeway", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("iat", testNow.Add(9*time.Second).Unix()))},
		{"aud as array", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("aud", []string{"other", "agentry"}))},
		{"no iat", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("iat", nil))},
	}
	v := mainVerifier(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := v.Verify(tt.token)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if p.UserID != "user-1" || !slices.Equal(p.Scopes, []string{"agents:read"}) || p.Admin {
				t.Errorf("principal = %+v", p)
			}
		})
	}
}

func TestVerify_ReadsPrincipalClaims(t *testing.T) {
	t.Parallel()
	k := keys(t)
	v := mainVerifier(t)
	tests := []struct {
		name string
		c    jwt.MapClaims
		want Principal
	}{
		{"space separated scopes", claims("scopes", "agents:read sessions:write", "sid", "s-1"),
			Principal{UserID: "user-1", SessionID: "s-1", Scopes: []string{"agents:read", "sessions:write"}}},
		{"admin scope", claims("scopes", []string{AdminScope}), Principal{UserID: "user-1", Scopes: []string{AdminScope}, Admin: true}},
		{"no scopes", claims("scopes", nil), Principal{UserID: "user-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := v.Verify(sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", tt.c))
			if err != nil {
				t.Fatal(err)
			}
			if p.UserID != tt.want.UserID || p.SessionID != tt.want.SessionID || p.Admin != tt.want.Admin || !slices.Equal(p.Scopes, tt.want.Scopes) {
				t.Errorf("principal = %+v, want %+v", p, tt.want)
			}
		})
	}
}

func TestVerify_TokenWithoutSubjectIsInvalid(t *testing.T) {
	t.Parallel()
	k := keys(t)
	v := mainVerifier(t)
	tests := map[string]jwt.MapClaims{
		"no sub":                   claims("sub", nil),
		"empty sub":                claims("sub", ""),
		"whitespace-only sub":      claims("sub", " \t\n "),
		"admin token without sub":  claims("sub", nil, "scopes", []string{AdminScope}),
		"admin token with a blank": claims("sub", "   ", "scopes", []string{AdminScope}),
	}
	for name, c := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := v.Verify(sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", c))
			if err == nil {
				t.Fatalf("accepted: principal %+v", p)
			}
			if !errors.Is(err, ErrNoSubject) || !errors.Is(err, ErrInvalidToken) {
				t.Errorf("error %v does not wrap ErrNoSubject and ErrInvalidToken", err)
			}
		})
	}
}

func TestVerify_RequireKIDRejectsKidlessTokens(t *testing.T) {
	t.Parallel()
	k := keys(t)
	v, err := NewJWTVerifier(JWTConfig{
		Keys:       []Key{mustKey(t, "rsa-a", publicPEM(t, &k.rsaA.PublicKey)), mustKey(t, "hs", string(k.secret))},
		Algorithms: []string{"RS256", "HS256"},
		RequireKID: true,
		Now:        func() time.Time { return testNow },
	})
	if err != nil {
		t.Fatal(err)
	}
	c := claims("aud", nil, "iss", nil)
	tests := []struct {
		name  string
		token string
		ok    bool
	}{
		{"RS256 with its kid", sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", c), true},
		{"HS256 with its kid", sign(t, jwt.SigningMethodHS256, k.secret, "hs", c), true},
		{"RS256 by a trusted key without kid", sign(t, jwt.SigningMethodRS256, k.rsaA, "", c), false},
		{"HS256 by a trusted secret without kid", sign(t, jwt.SigningMethodHS256, k.secret, "", c), false},
		{"empty kid", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
			tok.Header["kid"] = ""
			s, _ := tok.SignedString(k.rsaA)
			return s
		}(), false},
		{"unknown kid", sign(t, jwt.SigningMethodRS256, k.rsaA, "other", c), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := v.Verify(tt.token)
			if tt.ok && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidToken) {
				t.Fatalf("Verify = %v, want ErrInvalidToken", err)
			}
		})
	}
}

func TestVerify_Leeway(t *testing.T) {
	t.Parallel()
	k := keys(t)
	key := mustKey(t, "", publicPEM(t, &k.rsaA.PublicKey))
	expiredAgo := func(d time.Duration) string {
		return sign(t, jwt.SigningMethodRS256, k.rsaA, "", claims("aud", nil, "iss", nil, "exp", testNow.Add(-d).Unix()))
	}
	tests := []struct {
		name     string
		leeway   *time.Duration
		accepted map[time.Duration]bool
	}{
		{"nil is DefaultLeeway", nil, map[time.Duration]bool{5 * time.Second: true, 11 * time.Second: false}},
		{"zero is none", new(time.Duration(0)), map[time.Duration]bool{time.Second: false}},
		{"30s", new(30 * time.Second), map[time.Duration]bool{20 * time.Second: true, 40 * time.Second: false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := NewJWTVerifier(JWTConfig{Keys: []Key{key}, Leeway: tt.leeway, Now: func() time.Time { return testNow }})
			if err != nil {
				t.Fatal(err)
			}
			for ago, want := range tt.accepted {
				if _, err := v.Verify(expiredAgo(ago)); (err == nil) != want {
					t.Errorf("token expired %s ago: accepted=%v, want %v (%v)", ago, err == nil, want, err)
				}
			}
		})
	}
	if _, err := NewJWTVerifier(JWTConfig{Keys: []Key{key}, Leeway: new(-time.Second)}); err == nil {
		t.Error("negative leeway accepted")
	}
}

func TestNewJWTVerifier_RequireKIDNeedsEveryKeyNamed(t *testing.T) {
	t.Parallel()
	k := keys(t)
	_, err := NewJWTVerifier(JWTConfig{
		Keys:       []Key{mustKey(t, "rsa-a", publicPEM(t, &k.rsaA.PublicKey)), mustKey(t, "", publicPEM(t, &k.rsaB.PublicKey))},
		RequireKID: true,
	})
	if err == nil || !strings.Contains(err.Error(), "key 1") || !strings.Contains(err.Error(), "kid") {
		t.Fatalf("NewJWTVerifier = %v, want an error naming key 1 and its missing kid", err)
	}
}

func TestVerify_KeyRotation(t *testing.T) {
	t.Parallel()
	k := keys(t)
	oldKey := mustKey(t, "", publicPEM(t, &k.rsaA.PublicKey))
	newKey := mustKey(t, "", publicPEM(t, &k.rsaB.PublicKey))
	oldTok := sign(t, jwt.SigningMethodRS256, k.rsaA, "", claims("aud", nil, "iss", nil))
	newTok := sign(t, jwt.SigningMethodRS256, k.rsaB, "", claims("aud", nil, "iss", nil))
	verifier := func(keys ...Key) *JWTVerifier {
		v, err := NewJWTVerifier(JWTConfig{Keys: keys, Now: func() time.Time { return testNow }})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	both := verifier(newKey, oldKey)
	for name, tok := range map[string]string{"old": oldTok, "new": newTok} {
		if _, err := both.Verify(tok); err != nil {
			t.Errorf("%s key rejected while both are configured: %v", name, err)
		}
	}
	onlyNew := verifier(newKey)
	if _, err := onlyNew.Verify(newTok); err != nil {
		t.Errorf("new key rejected: %v", err)
	}
	if _, err := onlyNew.Verify(oldTok); err == nil {
		t.Error("old key still accepted after it was removed")
	}
}

func TestVerify_JWKSKeysMatchedByKid(t *testing.T) {
	t.Parallel()
	k := keys(t)
	set := jwkset.JWKSMarshal{}
	for _, e := range []struct {
		kid string
		key any
	}{{"a", &k.rsaA.PublicKey}, {"b", &k.rsaB.PublicKey}, {"e", &k.ec.PublicKey}} {
		j, err := jwkset.NewJWKFromKey(e.key, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: e.kid, USE: jwkset.UseSig}})
		if err != nil {
			t.Fatal(err)
		}
		set.Keys = append(set.Keys, j.Marshal())
	}
	data, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := ParseJWKS(data)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewJWTVerifier(JWTConfig{Keys: ks, Algorithms: []string{"RS256", "ES256"}, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	ok := []string{
		sign(t, jwt.SigningMethodRS256, k.rsaB, "b", claims()),
		sign(t, jwt.SigningMethodRS256, k.rsaA, "a", claims()),
		sign(t, jwt.SigningMethodES256, k.ec, "e", claims()),
		sign(t, jwt.SigningMethodRS256, k.rsaB, "", claims()),
	}
	for i, tok := range ok {
		if _, err := v.Verify(tok); err != nil {
			t.Errorf("token %d rejected: %v", i, err)
		}
	}
	bad := map[string]string{
		"kid of another key": sign(t, jwt.SigningMethodRS256, k.rsaB, "a", claims()),
		"unknown kid":        sign(t, jwt.SigningMethodRS256, k.rsaB, "zzz", claims()),
	}
	for name, tok := range bad {
		if _, err := v.Verify(tok); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestNewJWTVerifier_RejectsBadConfig(t *testing.T) {
	t.Parallel()
	k := keys(t)
	rsaKey := mustKey(t, "", publicPEM(t, &k.rsaA.PublicKey))
	tests := []struct {
		name string
		cfg  JWTConfig
	}{
		{"no keys", JWTConfig{}},
		{"alg none", JWTConfig{Keys: []Key{rsaKey}, Algorithms: []string{"none"}}},
		{"unknown alg", JWTConfig{Keys: []Key{rsaKey}, Algorithms: []string{"XS256"}}},
		{"key fits no allowed alg", JWTConfig{Keys: []Key{rsaKey}, Algorithms: []string{"HS256"}}},
		{"zero key", JWTConfig{Keys: []Key{{}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := NewJWTVerifier(tt.cfg); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestParseKey_RejectsUnsafeKeys(t *testing.T) {
	t.Parallel()
	small, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"empty":         "  ",
		"short secret":  "too-short",
		"broken PEM":    "-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n",
		"private key":   "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
		"unknown block": "-----BEGIN FOO-----\nAAAA\n-----END FOO-----\n",
		"two blocks":    publicPEM(t, &small.PublicKey) + publicPEM(t, &small.PublicKey),
	}
	for name, text := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if _, err := ParseKey("k", text); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func FuzzParseToken(f *testing.F) {
	k := keys(f)
	f.Add(sign(f, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims()))
	f.Add(sign(f, jwt.SigningMethodHS256, k.secret, "hs", claims()))
	f.Add(sign(f, jwt.SigningMethodEdDSA, k.ed, "ed", claims()))
	f.Add(b64(map[string]string{"alg": "none"}) + "." + b64(claims()) + ".")
	f.Add("a.b.c")
	f.Add("..")
	f.Add(b64(`{"alg":"RS256","kid":{}}`) + ".e30.AA")
	f.Add(sign(f, jwt.SigningMethodRS256, k.rsaA, "", claims()))
	f.Add(sign(f, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("sub", " ")))
	f.Add(sign(f, jwt.SigningMethodHS256, k.secret, "", claims("sub", nil)))
	v := mainVerifier(f)
	strictCfg := v.cfg
	strictCfg.RequireKID = true
	strict, err := NewJWTVerifier(strictCfg)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, token string) {
		p, err := v.Verify(token)
		if err == nil && (p == nil || strings.TrimSpace(p.UserID) == "") {
			t.Fatalf("accepted without a principal or subject: %+v", p)
		}
		if err != nil && !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("error %v does not wrap ErrInvalidToken", err)
		}
		sp, serr := strict.Verify(token)
		if serr != nil && !errors.Is(serr, ErrInvalidToken) {
			t.Fatalf("require_kid: error %v does not wrap ErrInvalidToken", serr)
		}
		if serr == nil && (err != nil || sp.UserID != p.UserID) {
			t.Fatalf("require_kid accepted a token the default verifier refused (%v)", err)
		}
	})
}
