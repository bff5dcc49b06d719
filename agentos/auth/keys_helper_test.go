package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// testKeys are generated once per test binary: RSA generation is slow.
type testKeys struct {
	rsaA, rsaB, rsaUnknown *rsa.PrivateKey
	ec                     *ecdsa.PrivateKey
	ed                     ed25519.PrivateKey
	secret                 []byte
}

var (
	keysOnce sync.Once
	keysVal  testKeys
)

func keys(t testing.TB) testKeys {
	t.Helper()
	keysOnce.Do(func() {
		gen := func() *rsa.PrivateKey {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			return k
		}
		keysVal.rsaA, keysVal.rsaB, keysVal.rsaUnknown = gen(), gen(), gen()
		ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			panic(err)
		}
		keysVal.ec = ec
		_, ed, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			panic(err)
		}
		keysVal.ed = ed
		keysVal.secret = []byte("0123456789abcdef0123456789abcdef-test-secret")
	})
	return keysVal
}

// publicPEM encodes a public key as a PKIX PEM block.
func publicPEM(t testing.TB, pub any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

func mustKey(t testing.TB, id, text string) Key {
	t.Helper()
	k, err := ParseKey(id, text)
	if err != nil {
		t.Fatalf("ParseKey(%q): %v", id, err)
	}
	return k
}

// testNow is the fixed clock every verifier in these tests uses.
var testNow = time.Unix(1_800_000_000, 0)

// claims returns valid claims at testNow; override entries by passing pairs.
func claims(kv ...any) jwt.MapClaims {
	c := jwt.MapClaims{
		"sub":    "user-1",
		"iss":    "https://issuer.test",
		"aud":    "agentry",
		"iat":    testNow.Unix(),
		"exp":    testNow.Add(time.Hour).Unix(),
		"scopes": []string{"agents:read"},
	}
	for i := 0; i+1 < len(kv); i += 2 {
		name := kv[i].(string)
		if kv[i+1] == nil {
			delete(c, name)
			continue
		}
		c[name] = kv[i+1]
	}
	return c
}

// sign signs claims with method and key, setting kid when non-empty.
func sign(t testing.TB, method jwt.SigningMethod, key any, kid string, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(method, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", method.Alg(), err)
	}
	return s
}

func b64(v any) string {
	var raw []byte
	switch x := v.(type) {
	case string:
		raw = []byte(x)
	default:
		var err error
		if raw, err = json.Marshal(x); err != nil {
			panic(err)
		}
	}
	return base64.RawURLEncoding.EncodeToString(raw)
}
