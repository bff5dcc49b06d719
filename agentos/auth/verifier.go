package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
)

// ErrMissingCredentials: the request carried no token.
var ErrMissingCredentials = errors.New("authorization header required")

// Authenticator turns a bearer token into a principal: the static security key
// (an admin principal) and/or a JWT. A nil *Authenticator or one with neither
// configured is disabled.
type Authenticator struct {
	securityKey [32]byte
	hasKey      bool
	jwt         *JWTVerifier
}

// MinSecurityKeyBytes is the shortest accepted static security key: it grants
// admin rights, so a guessable one (a word, "change-me") is refused.
const MinSecurityKeyBytes = 16

// NewAuthenticator combines a static security key ("" for none; otherwise at
// least MinSecurityKeyBytes) and a JWT verifier (nil for none).
func NewAuthenticator(securityKey string, jwt *JWTVerifier) (*Authenticator, error) {
	a := &Authenticator{jwt: jwt}
	if securityKey != "" {
		if len(securityKey) < MinSecurityKeyBytes {
			return nil, fmt.Errorf("auth: the security key is %d bytes; use at least %d random bytes (e.g. openssl rand -hex 32)", len(securityKey), MinSecurityKeyBytes)
		}
		a.securityKey = sha256.Sum256([]byte(securityKey))
		a.hasKey = true
	}
	return a, nil
}

// Enabled reports whether requests must authenticate.
func (a *Authenticator) Enabled() bool { return a != nil && (a.hasKey || a.jwt != nil) }

// Authenticate checks a bearer token. The security key is compared in constant
// time (over hashes, so length leaks nothing).
func (a *Authenticator) Authenticate(token string) (*Principal, error) {
	if token == "" {
		return nil, ErrMissingCredentials
	}
	if a.hasKey {
		sum := sha256.Sum256([]byte(token))
		if subtle.ConstantTimeCompare(sum[:], a.securityKey[:]) == 1 {
			return &Principal{Admin: true, Scopes: []string{AdminScope}}, nil
		}
	}
	if a.jwt != nil {
		return a.jwt.Verify(token)
	}
	return nil, ErrInvalidToken
}
