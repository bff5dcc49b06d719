package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/MicahParks/jwkset"
)

// Key families: a key is only ever used with algorithms of its own family, so an
// RSA public key can never be fed to HMAC (RFC 8725 §2.1, algorithm confusion).
const (
	familyRSA     = "rsa"
	familyECDSA   = "ecdsa"
	familyEd25519 = "ed25519"
	familyHMAC    = "hmac"
)

// MinHMACSecretBytes is the shortest accepted HMAC secret (RFC 7518 §3.2: at
// least the hash size; HS384/HS512 need 48/64 bytes and are checked per token).
const MinHMACSecretBytes = 32

// MinRSABits is the smallest accepted RSA modulus.
const MinRSABits = 2048

// ErrWeakKey marks a verification key refused as too weak to trust: an HMAC
// secret under MinHMACSecretBytes, an RSA modulus under MinRSABits or even,
// an RSA exponent that is even or not from 2^16+1 to 2^31-1 (FIPS 186-5
// §5.4; an exponent of 1 makes every signature its own message).
var ErrWeakKey = errors.New("auth: weak verification key")

// algorithms maps each supported JWS algorithm to its key family.
var algorithms = map[string]string{
	"RS256": familyRSA, "RS384": familyRSA, "RS512": familyRSA,
	"PS256": familyRSA, "PS384": familyRSA, "PS512": familyRSA,
	"ES256": familyECDSA, "ES384": familyECDSA, "ES512": familyECDSA,
	"EdDSA": familyEd25519,
	"HS256": familyHMAC, "HS384": familyHMAC, "HS512": familyHMAC,
}

// Key is one verification key: a public key or an HMAC secret.
type Key struct {
	// ID is matched against a token's "kid" header. Keys from a JWKS carry their
	// kid; PEM keys and secrets may be given one.
	ID string
	// Alg, when set (a JWK's "alg"), restricts the key to that one algorithm.
	Alg    string
	family string
	// fromSet marks a key of a JWKS: one fitting no allowed algorithm is
	// left unused, where a key configured by itself is an error.
	fromSet bool
	// pub is *rsa.PublicKey, *ecdsa.PublicKey, ed25519.PublicKey or []byte.
	pub any
}

// ParseKey reads a key's text: a PEM public key or certificate (RSA, ECDSA
// P-256/384/521, Ed25519) or, for anything not starting with "-----BEGIN", an
// HMAC secret of at least MinHMACSecretBytes bytes that does not look like a
// file path (LooksLikePath; LoadKey reads files).
func ParseKey(id, text string) (Key, error) {
	trimmed := strings.TrimSpace(text)
	if trimmed == "" {
		return Key{}, errors.New("auth: empty verification key")
	}
	if !strings.HasPrefix(trimmed, "-----BEGIN") {
		if LooksLikePath(text) {
			// A path taken for a secret lets anyone who knows the path sign tokens.
			return Key{}, fmt.Errorf("auth: verification key %s looks like a file path, not an HMAC secret; give a readable key file, or a random secret (hex, base64 or base64url)", shownEntry(text))
		}
		if len(text) < MinHMACSecretBytes {
			return Key{}, fmt.Errorf("%w: hmac secret %q is %d bytes; use at least %d random bytes", ErrWeakKey, id, len(text), MinHMACSecretBytes)
		}
		return Key{ID: id, family: familyHMAC, pub: []byte(text)}, nil
	}
	block, rest := pem.Decode([]byte(trimmed))
	if block == nil {
		return Key{}, fmt.Errorf("auth: verification key %q is not valid PEM", id)
	}
	if len(strings.TrimSpace(string(rest))) > 0 {
		return Key{}, fmt.Errorf("auth: verification key %q holds more than one PEM block; list each key separately", id)
	}
	var pub any
	var err error
	switch block.Type {
	case "PUBLIC KEY":
		pub, err = x509.ParsePKIXPublicKey(block.Bytes)
	case "RSA PUBLIC KEY":
		pub, err = x509.ParsePKCS1PublicKey(block.Bytes)
	case "CERTIFICATE":
		var cert *x509.Certificate
		if cert, err = x509.ParseCertificate(block.Bytes); err == nil {
			pub = cert.PublicKey
		}
	default:
		if strings.Contains(block.Type, "PRIVATE") {
			return Key{}, fmt.Errorf("auth: verification key %q is a private key; configure the public key only", id)
		}
		return Key{}, fmt.Errorf("auth: verification key %q has unsupported PEM type %q", id, block.Type)
	}
	if err != nil {
		return Key{}, fmt.Errorf("auth: verification key %q: %w", id, err)
	}
	return newPublicKey(id, "", pub)
}

func newPublicKey(id, alg string, pub any) (Key, error) {
	k := Key{ID: id, Alg: alg, pub: pub}
	switch p := pub.(type) {
	case *rsa.PublicKey:
		if err := checkRSA(id, p); err != nil {
			return Key{}, err
		}
		k.family = familyRSA
	case *ecdsa.PublicKey:
		k.family = familyECDSA
	case ed25519.PublicKey:
		k.family = familyEd25519
	case []byte:
		if len(p) < MinHMACSecretBytes {
			return Key{}, fmt.Errorf("%w: hmac key %q is %d bytes; use at least %d", ErrWeakKey, id, len(p), MinHMACSecretBytes)
		}
		k.family = familyHMAC
	default:
		return Key{}, fmt.Errorf("auth: key %q has unsupported type %T", id, pub)
	}
	if alg != "" {
		fam, ok := algorithms[alg]
		if !ok || fam != k.family {
			return Key{}, fmt.Errorf("auth: key %q declares alg %q, which does not fit a %s key", id, alg, k.family)
		}
	}
	return k, nil
}

// checkRSA refuses an RSA public key no token should be trusted with.
func checkRSA(id string, p *rsa.PublicKey) error {
	switch {
	case p.N == nil || p.N.Sign() <= 0:
		return fmt.Errorf("auth: rsa key %q has no modulus", id)
	case p.N.BitLen() < MinRSABits:
		return fmt.Errorf("%w: rsa key %q is %d bits; use at least %d", ErrWeakKey, id, p.N.BitLen(), MinRSABits)
	case p.N.Bit(0) == 0:
		return fmt.Errorf("%w: rsa key %q has an even modulus, which no RSA key has", ErrWeakKey, id)
	case p.E <= 1<<16 || p.E > math.MaxInt32 || p.E%2 == 0:
		return fmt.Errorf("%w: rsa key %q has public exponent %d; use an odd exponent from 65537 to 2^31-1 (normally 65537)", ErrWeakKey, id, p.E)
	}
	return nil
}

// ParseJWKS reads a JSON Web Key Set: its signature keys that can be used,
// the others left out (ReadJWKS reports them). Private members of keys are
// ignored: only the public half is kept. It fails when no key can be used.
func ParseJWKS(data []byte) ([]Key, error) {
	keys, _, err := ReadJWKS(data)
	return keys, err
}

// SkippedKey is a key of a JWKS that was left out, and why.
type SkippedKey struct {
	// Index is the key's position in "keys"; KID its kid, if any.
	Index int
	KID   string
	Err   error
}

func (s SkippedKey) Error() string {
	return fmt.Sprintf("key %d (kid %q): %v", s.Index, s.KID, s.Err)
}

func (s SkippedKey) Unwrap() error { return s.Err }

// ReadJWKS is ParseJWKS reporting the keys it left out: one malformed or
// weak key (a provider publishing a key for another use or algorithm, a
// typo in a hand-written set) must not refuse the set's good keys, and with
// them every login. Keys marked for another use than "sig" are not
// signature keys and are neither kept nor reported. Without a usable key
// the error names every key's reason (ErrWeakKey matches when a key was
// weak).
func ReadJWKS(data []byte) (keys []Key, skipped []SkippedKey, err error) {
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(data, &set); err != nil {
		return nil, nil, fmt.Errorf("auth: jwks: %w", err)
	}
	for i, raw := range set.Keys {
		var m jwkset.JWKMarshal
		if err := json.Unmarshal(raw, &m); err != nil {
			skipped = append(skipped, SkippedKey{Index: i, Err: fmt.Errorf("not a JSON Web Key: %w", err)})
			continue
		}
		if m.USE != "" && m.USE != jwkset.UseSig {
			continue
		}
		k, err := jwkKey(m)
		if err != nil {
			skipped = append(skipped, SkippedKey{Index: i, KID: m.KID, Err: err})
			continue
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		if len(skipped) == 0 {
			return nil, nil, errors.New("auth: jwks has no signature keys")
		}
		errs := make([]error, len(skipped))
		for i, s := range skipped {
			errs[i] = s
		}
		return nil, skipped, fmt.Errorf("auth: jwks has no usable signature keys: %w", errors.Join(errs...))
	}
	return keys, skipped, nil
}

// jwkKey turns one JWK into a verification key.
func jwkKey(m jwkset.JWKMarshal) (Key, error) {
	jwks, err := jwkset.JWKSMarshal{Keys: []jwkset.JWKMarshal{m}}.JWKSlice()
	if err != nil {
		return Key{}, err
	}
	pub := jwks[0].Key()
	switch p := pub.(type) {
	case *rsa.PrivateKey:
		pub = &p.PublicKey
	case *ecdsa.PrivateKey:
		pub = &p.PublicKey
	case ed25519.PrivateKey:
		pub = p.Public()
	}
	k, err := newPublicKey(m.KID, m.ALG.String(), pub)
	k.fromSet = true
	return k, err
}

// fits reports whether the key may verify a token signed with alg.
func (k Key) fits(alg string) bool {
	fam, ok := algorithms[alg]
	if !ok || fam != k.family || (k.Alg != "" && k.Alg != alg) {
		return false
	}
	switch p := k.pub.(type) {
	case *ecdsa.PublicKey:
		want := map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()}[alg]
		return p.Curve == want
	case []byte:
		return len(p) >= map[string]int{"HS256": 32, "HS384": 48, "HS512": 64}[alg]
	}
	return true
}
