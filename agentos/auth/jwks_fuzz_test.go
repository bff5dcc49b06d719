package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// FuzzReadJWKS: any bytes read as a JWKS either fail or give keys of a
// known family holding public material only, each of the family of the
// alg it declares, RSA ones passing the weak-key checks; a verifier made of them
// refuses a token signed by a key outside the set.
func FuzzReadJWKS(f *testing.F) {
	k := keys(f)
	for _, m := range []map[string]any{
		rsaJWK("r", k.rsaA.N, 65537),
		rsaJWK("e1", k.rsaA.N, 1),
		{"kty": "EC", "crv": "P-256", "kid": "ec", "x": "AA", "y": "AA"},
		{"kty": "OKP", "crv": "Ed25519", "kid": "ed", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
		{"kty": "OKP", "crv": "Ed25519", "x": "AAAA"},
		{"kty": "oct", "kid": "hs", "k": "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA", "alg": "HS256"},
		{"kty": "RSA", "alg": "HS256", "n": "AQAB", "e": "AQAB"},
		{"kty": "RSA", "use": "enc", "n": "AQAB", "e": "AQAB"},
	} {
		b, _ := json.Marshal(map[string]any{"keys": []any{m}})
		f.Add(b)
	}
	f.Add([]byte(`{"keys":[{}]}`))
	f.Add([]byte(`{"keys":null}`))
	f.Add([]byte(`{"keys":[1,"x",null]}`))
	foreign := sign(f, jwt.SigningMethodRS256, k.rsaUnknown, "r", claims())
	f.Fuzz(func(t *testing.T, data []byte) {
		got, skipped, err := ReadJWKS(data)
		if err != nil {
			if len(got) != 0 {
				t.Fatalf("error %v with %d keys", err, len(got))
			}
			return
		}
		if len(got) == 0 {
			t.Fatalf("no error and no key (%d skipped)", len(skipped))
		}
		for _, key := range got {
			switch p := key.pub.(type) {
			case *rsa.PublicKey:
				if key.family != familyRSA || checkRSA(key.ID, p) != nil {
					t.Fatalf("rsa key %q of family %q kept: %v", key.ID, key.family, checkRSA(key.ID, p))
				}
			case *ecdsa.PublicKey:
				if key.family != familyECDSA {
					t.Fatalf("ecdsa key of family %q", key.family)
				}
			case ed25519.PublicKey:
				if key.family != familyEd25519 || len(p) != ed25519.PublicKeySize {
					t.Fatalf("ed25519 key of family %q, %d bytes", key.family, len(p))
				}
			case []byte:
				if key.family != familyHMAC || len(p) < MinHMACSecretBytes {
					t.Fatalf("hmac key of family %q, %d bytes", key.family, len(p))
				}
			default:
				t.Fatalf("key %q holds %T", key.ID, key.pub)
			}
			if key.Alg != "" && algorithms[key.Alg] != key.family {
				t.Fatalf("key %q (%s) declares alg %s of another family", key.ID, key.family, key.Alg)
			}
		}
		v, err := NewJWTVerifier(JWTConfig{Keys: got, Algorithms: []string{"RS256", "PS256", "ES256", "ES384", "ES512", "EdDSA", "HS256", "HS384", "HS512"}})
		if err != nil {
			return
		}
		if _, err := v.Verify(foreign); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("a token signed outside the set: %v", err)
		}
	})
}
