package auth

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/MicahParks/jwkset"
	"github.com/golang-jwt/jwt/v5"
)

func TestLooksLikePath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		entry string
		path  bool
	}{
		{"/etc/agentry/keys/jwt-verification-public.pem", true},
		{"/run/secrets/agentry_jwt_verification_key", true},
		{"/etc/agentry/jwtverificationkeyforproduction", true},
		{"./keys/jwt.pem", true},
		{"../keys/jwt", true},
		{"~/keys/jwt", true},
		{"keys/jwt.json", true},
		{"jwks.jwks", true},
		{"public.pem", true},
		{`C:\keys\jwt.pem`, true},
		{`keys\jwt`, true},
		{"  /etc/agentry/jwt.pem\t", true},
		// Secrets: hex, base64url and padded standard base64 (which may hold "/").
		{strings.Repeat("0123456789abcdef", 4), false},
		{"Xq9T0bV-h3_kLmN2pQrS4tUvW5xYz6A7B8C9D0E1F2G", false},
		{"MpMUIscd7+U/aIjMrxsbwV9smx/3KmNgAbMqo8f0az8=", false},
		{"/1oa4BKvpdTIicUK1Ceq9UXTGk+sBP/BxNA9QDukJQo=", false},
		{"MbygIJTreBJqUXsgaojHPPqexvcExwMNGCEsrOgg8CXwC/DqaNvz86VDbKY7U797+ArY1d59g1nQt/7Z28OrmQ==", false},
		{"a long passphrase with spaces that is clearly not a path", false},
		{"-----BEGIN PUBLIC KEY-----\nAAAA/BBBB\n-----END PUBLIC KEY-----\n", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := LooksLikePath(tt.entry); got != tt.path {
			t.Errorf("LooksLikePath(%q) = %v, want %v", tt.entry, got, tt.path)
		}
	}
}

func TestParseKey_RefusesPathLikeSecrets(t *testing.T) {
	t.Parallel()
	for _, entry := range []string{
		"/etc/agentry/keys/jwt-verification-public.pem",
		"./config/production/jwt-signing-secret",
		"~/agentry/keys/jwt-verification-secret",
	} {
		k, err := ParseKey("", entry)
		if err == nil {
			t.Errorf("ParseKey(%q) accepted it as a %s key", entry, k.family)
			continue
		}
		if !strings.Contains(err.Error(), "looks like a file path") {
			t.Errorf("ParseKey(%q) = %v, want a path error", entry, err)
		}
	}
}

// writeFile writes data under dir and returns the path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadKey_ReadsPEMAndJWKSFiles(t *testing.T) {
	t.Parallel()
	k := keys(t)
	dir := t.TempDir()
	pemPath := writeFile(t, dir, "keys/rsa-a.pem", []byte(publicPEM(t, &k.rsaA.PublicKey)))
	j, err := jwkset.NewJWKFromKey(k.ec.Public(), jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: "ec-1"}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := json.Marshal(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{j.Marshal()}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "keys/set.jwks", set)
	// A file that does not look like a path by name is still read when it exists.
	writeFile(t, dir, "rsakey", []byte(publicPEM(t, &k.rsaA.PublicKey)))

	tests := []struct {
		name, id, entry, dir string
		wantKID              string
		token                string
	}{
		{"absolute PEM path", "a", pemPath, "", "a", sign(t, jwt.SigningMethodRS256, k.rsaA, "a", claims())},
		{"relative PEM path", "", "keys/rsa-a.pem", dir, "", sign(t, jwt.SigningMethodRS256, k.rsaA, "", claims())},
		{"dot-relative PEM path", "", "./keys/rsa-a.pem", dir, "", sign(t, jwt.SigningMethodRS256, k.rsaA, "", claims())},
		{"bare existing file name", "", "rsakey", dir, "", sign(t, jwt.SigningMethodRS256, k.rsaA, "", claims())},
		{"JWKS file", "", "keys/set.jwks", dir, "ec-1", sign(t, jwt.SigningMethodES256, k.ec, "ec-1", claims())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ks, err := LoadKey(tt.id, tt.entry, tt.dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(ks) != 1 || ks[0].ID != tt.wantKID || ks[0].family == familyHMAC {
				t.Fatalf("keys = %+v", ks)
			}
			v, err := NewJWTVerifier(JWTConfig{Keys: ks, Algorithms: []string{"RS256", "ES256", "HS256"}, Now: func() time.Time { return testNow }})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := v.Verify(tt.token); err != nil {
				t.Errorf("token signed by the file's key: %v", err)
			}
			if _, err := v.Verify(sign(t, jwt.SigningMethodHS256, []byte(tt.entry+strings.Repeat("-", 32)), "", claims())); err == nil {
				t.Error("an HS256 token was accepted")
			}
		})
	}
}

func TestLoadKey_HomeDirectory(t *testing.T) {
	k := keys(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	writeFile(t, home, "agentry/jwt.pem", []byte(publicPEM(t, &k.rsaA.PublicKey)))
	ks, err := LoadKey("", "~/agentry/jwt.pem", "/elsewhere")
	if err != nil || len(ks) != 1 || ks[0].family != familyRSA {
		t.Fatalf("LoadKey(~/...) = %+v, %v", ks, err)
	}
}

func TestLoadKey_RefusesUnreadableOrUnusableFiles(t *testing.T) {
	t.Parallel()
	k := keys(t)
	dir := t.TempDir()
	writeFile(t, dir, "secret.txt", []byte(strings.Repeat("s", 40)))
	writeFile(t, dir, "set.json", []byte(`{"keys":[]}`))
	writeFile(t, dir, "garbage.pem", []byte("-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----\n"))
	writeFile(t, dir, "private.pem", []byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"))
	writeFile(t, dir, "huge.pem", []byte(strings.Repeat("A", MaxKeyFileBytes+1)))
	rsaSet, err := jwkset.NewJWKFromKey(&k.rsaA.PublicKey, jwkset.JWKOptions{Metadata: jwkset.JWKMetadataOptions{KID: "r"}})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{rsaSet.Marshal()}})
	writeFile(t, dir, "named.jwks", data)
	if err := os.Mkdir(filepath.Join(dir, "keys.d"), 0o700); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, id, entry, want string
	}{
		{"missing absolute path", "", filepath.Join(dir, "no-such-key.pem"), "no-such-key.pem"},
		// Shaped like a path by its separators alone, it may be a secret:
		// named by its length (TestLoadKey_ErrorsDoNotShowAnEntryThatMayBeASecret).
		{"missing path without extension", "", "/etc/agentry/jwtverificationkeyforproduction", "(44 characters, not shown: it may be a secret) looks like a file path but cannot be read (no such file"},
		{"missing relative path", "", "keys/typo.pem", "keys/typo.pem"},
		{"missing path in home", "", "~/no-such-agentry-key/jwt.pem", "~/no-such-agentry-key/jwt.pem"},
		{"directory", "", "keys.d/", "(7 characters, not shown: it may be a secret) looks like a file path but cannot be read (not a regular file)"},
		{"file holding a secret", "", "secret.txt", "neither a PEM key nor a JWKS"},
		{"empty JWKS", "", "set.json", "no signature keys"},
		{"broken PEM file", "", "garbage.pem", "garbage.pem"},
		{"private key file", "", "private.pem", "private key"},
		{"oversized file", "", "huge.pem", "larger than"},
		{"kid for a JWKS file", "k1", "named.jwks", "carry their own kid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ks, err := LoadKey(tt.id, tt.entry, dir)
			if err == nil {
				t.Fatalf("accepted: %+v", ks)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func TestLoadKey_SecretsAndInlinePEM(t *testing.T) {
	t.Parallel()
	k := keys(t)
	for name, entry := range map[string]string{
		"hex secret":             strings.Repeat("0123456789abcdef", 4),
		"base64 secret with '/'": "MpMUIscd7+U/aIjMrxsbwV9smx/3KmNgAbMqo8f0az8=",
	} {
		ks, err := LoadKey("", entry, t.TempDir())
		if err != nil || len(ks) != 1 || ks[0].family != familyHMAC {
			t.Errorf("%s: LoadKey = %+v, %v; want one HMAC key", name, ks, err)
		}
	}
	ks, err := LoadKey("p", publicPEM(t, &k.rsaA.PublicKey), "")
	if err != nil || len(ks) != 1 || ks[0].family != familyRSA || ks[0].ID != "p" {
		t.Errorf("inline PEM: %+v, %v", ks, err)
	}
	if _, err := LoadKey("", "too-short-secret", ""); err == nil {
		t.Error("short secret accepted")
	}
}

func FuzzParseKey(f *testing.F) {
	k := keys(f)
	f.Add(publicPEM(f, &k.rsaA.PublicKey))
	f.Add(string(k.secret))
	f.Add("/etc/agentry/keys/jwt-verification-public.pem")
	f.Add("MpMUIscd7+U/aIjMrxsbwV9smx/3KmNgAbMqo8f0az8=")
	f.Add(`C:\keys\jwt.pem`)
	f.Add("~/keys/jwt")
	f.Add("-----BEGIN PUBLIC KEY-----\n\n-----END PUBLIC KEY-----")
	f.Fuzz(func(t *testing.T, text string) {
		key, err := ParseKey("fuzz", text)
		if err != nil {
			return
		}
		if key.family == familyHMAC && (LooksLikePath(text) || len(text) < MinHMACSecretBytes) {
			t.Fatalf("%q became an HMAC secret although it looks like a path or is short", text)
		}
	})
}
