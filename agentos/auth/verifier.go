package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
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

// NewAuthenticator combines a static security key ("" for none) and a JWT
// verifier (nil for none).
func NewAuthenticator(securityKey string, jwt *JWTVerifier) *Authenticator {
	a := &Authenticator{jwt: jwt}
	if securityKey != "" {
		a.securityKey = sha256.Sum256([]byte(securityKey))
		a.hasKey = true
	}
	return a
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
