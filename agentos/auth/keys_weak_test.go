package auth

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// rsaJWK is an RSA public JWK with the given modulus and exponent.
func rsaJWK(kid string, n *big.Int, e int64) map[string]any {
	return map[string]any{"kty": "RSA", "kid": kid, "use": "sig",
		"n": base64.RawURLEncoding.EncodeToString(n.Bytes()), "e": base64.RawURLEncoding.EncodeToString(big.NewInt(e).Bytes())}
}

func jwksOf(t *testing.T, keys ...map[string]any) []byte {
	t.Helper()
	data, err := json.Marshal(map[string]any{"keys": keys})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// weakRSA are RSA public keys no token can be trusted with: an exponent of 1
// makes every signature its own message, an even exponent or modulus is no
// RSA key at all, a small exponent is refused by FIPS 186-5.
func weakRSA(t *testing.T) map[string]*rsa.PublicKey {
	n := keys(t).rsaA.N
	even := new(big.Int).Add(n, big.NewInt(1))
	return map[string]*rsa.PublicKey{
		"exponent 1":     {N: n, E: 1},
		"exponent 2":     {N: n, E: 2},
		"exponent 3":     {N: n, E: 3},
		"even exponent":  {N: n, E: 65538},
		"even modulus":   {N: even, E: 65537},
		"1024-bit":       {N: new(big.Int).Rsh(n, 1024), E: 65537},
		"huge exponent":  {N: n, E: 1<<31 + 1},
		"small exponent": {N: n, E: 1<<16 - 1},
	}
}

// A weak RSA key is refused when it is loaded, from a PEM text, a PEM file
// or a JWKS, with an error matching ErrWeakKey; it used to be accepted (and
// then refused every token, or, with a laxer RSA, verified forged ones).
func TestParseKey_RefusesWeakRSAKeys(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for name, pub := range weakRSA(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// x509 itself refuses an exponent over 2^31-1 in PEM.
			pemRefused := func(err error) bool { return errors.Is(err, ErrWeakKey) || err != nil && pub.E > 1<<31-1 }
			pkcs1 := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(pub)}))
			if _, err := ParseKey("k", pkcs1); !pemRefused(err) {
				t.Errorf("ParseKey(PKCS#1) = %v, want ErrWeakKey", err)
			}
			path := writeFile(t, dir, strings.ReplaceAll(name, " ", "-")+".pem", []byte(pkcs1))
			if _, err := LoadKey("", path, ""); !pemRefused(err) {
				t.Errorf("LoadKey(PEM file) = %v, want ErrWeakKey", err)
			}
			if _, err := ParseJWKS(jwksOf(t, rsaJWK("weak", pub.N, int64(pub.E)))); !errors.Is(err, ErrWeakKey) {
				t.Errorf("ParseJWKS = %v, want ErrWeakKey", err)
			}
		})
	}
	if _, err := ParseKey("k", publicPEM(t, &keys(t).rsaA.PublicKey)); err != nil {
		t.Fatalf("a sound 2048-bit key with e=65537 was refused: %v", err)
	}
}

// A key of a JWKS that cannot be used (weak, malformed, of an encryption
// algorithm, on an unsupported curve) is left out and reported; the set's
// other keys still verify tokens. One bad key used to refuse the whole set,
// and with it every login.
func TestParseJWKS_BadKeyLeavesTheOthers(t *testing.T) {
	t.Parallel()
	k := keys(t)
	good := rsaJWK("good", k.rsaB.N, 65537)
	set := jwksOf(t,
		rsaJWK("weak", k.rsaA.N, 1),
		map[string]any{"kty": "RSA", "kid": "broken", "n": "!!!", "e": "AQAB"},
		map[string]any{"kty": "RSA", "kid": "oaep", "alg": "RSA-OAEP", "n": good["n"], "e": "AQAB"},
		map[string]any{"kty": "EC", "kid": "k1", "crv": "secp256k1", "x": "AA", "y": "AA"},
		map[string]any{"kty": "RSA", "kid": "enc", "use": "enc", "n": good["n"], "e": "AQAB"},
		good,
	)
	ks, skipped, err := ReadJWKS(set)
	if err != nil {
		t.Fatalf("ReadJWKS: %v", err)
	}
	if len(ks) != 1 || ks[0].ID != "good" {
		t.Fatalf("keys = %+v, want the good key only", ks)
	}
	kids := map[string]error{}
	for _, s := range skipped {
		kids[s.KID] = s
	}
	for _, kid := range []string{"weak", "broken", "oaep", "k1"} {
		if kids[kid] == nil {
			t.Errorf("key %q is not reported as skipped (skipped: %v)", kid, skipped)
		}
	}
	if !errors.Is(kids["weak"], ErrWeakKey) {
		t.Errorf("the weak key's reason %v does not match ErrWeakKey", kids["weak"])
	}
	if _, ok := kids["enc"]; ok {
		t.Error("an encryption key is reported as skipped; it is simply not a signature key")
	}
	if ks2, err := ParseJWKS(set); err != nil || len(ks2) != 1 {
		t.Fatalf("ParseJWKS = %+v, %v; want the good key", ks2, err)
	}
	v, err := NewJWTVerifier(JWTConfig{Keys: ks, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(sign(t, jwt.SigningMethodRS256, k.rsaB, "good", claims())); err != nil {
		t.Fatalf("a token of the good key: %v", err)
	}
	// The JWKS file path keeps the good keys the same way.
	path := writeFile(t, t.TempDir(), "set.jwks", set)
	if fk, err := LoadKey("", path, ""); err != nil || len(fk) != 1 || fk[0].ID != "good" {
		t.Fatalf("LoadKey(JWKS file) = %+v, %v; want the good key", fk, err)
	}
	// Without a usable key the set is refused, each key's reason given.
	_, err = ParseJWKS(jwksOf(t, rsaJWK("weak", k.rsaA.N, 1), rsaJWK("short", new(big.Int).Rsh(k.rsaA.N, 1024), 65537)))
	if !errors.Is(err, ErrWeakKey) || !strings.Contains(err.Error(), `"weak"`) || !strings.Contains(err.Error(), `"short"`) {
		t.Fatalf("a set of weak keys: %v, want ErrWeakKey naming both", err)
	}
}

// A JWKS publishes keys for algorithms a server may not allow (an identity
// provider with RSA and EC keys, the server allowing RS256 only): the keys
// of the set that fit no allowed algorithm are not used, and the others
// are. NewJWTVerifier used to refuse the whole configuration for them. A
// key configured by itself (PEM) that fits no allowed algorithm is still an
// error: the operator named that key.
func TestNewJWTVerifier_SetKeysOfOtherAlgorithmsAreUnused(t *testing.T) {
	t.Parallel()
	k := keys(t)
	ec := map[string]any{"kty": "EC", "kid": "e", "use": "sig", "crv": "P-256",
		"x": base64.RawURLEncoding.EncodeToString(k.ec.X.FillBytes(make([]byte, 32))),
		"y": base64.RawURLEncoding.EncodeToString(k.ec.Y.FillBytes(make([]byte, 32)))}
	ks, err := ParseJWKS(jwksOf(t, rsaJWK("a", k.rsaA.N, 65537), ec))
	if err != nil || len(ks) != 2 {
		t.Fatalf("ParseJWKS = %+v, %v", ks, err)
	}
	v, err := NewJWTVerifier(JWTConfig{Keys: ks, Algorithms: []string{"RS256"}, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatalf("a set with an EC key next to the RSA one, RS256 allowed: %v", err)
	}
	if _, err := v.Verify(sign(t, jwt.SigningMethodRS256, k.rsaA, "a", claims("aud", nil, "iss", nil))); err != nil {
		t.Errorf("a token of the RSA key: %v", err)
	}
	if _, err := v.Verify(sign(t, jwt.SigningMethodES256, k.ec, "e", claims("aud", nil, "iss", nil))); err == nil {
		t.Error("an ES256 token was accepted with only RS256 allowed")
	}
	// Only keys of other algorithms: nothing could be verified.
	if _, err := NewJWTVerifier(JWTConfig{Keys: ks[1:], Algorithms: []string{"RS256"}}); err == nil {
		t.Error("a set whose keys fit no allowed algorithm was accepted")
	}
	if _, err := NewJWTVerifier(JWTConfig{Keys: []Key{mustKey(t, "", publicPEM(t, &k.ec.PublicKey)), ks[0]}, Algorithms: []string{"RS256"}}); err == nil {
		t.Error("a PEM key fitting no allowed algorithm was accepted")
	}
}
