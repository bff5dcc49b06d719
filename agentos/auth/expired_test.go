package auth

import (
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// ErrTokenExpired (the server's "Token has expired", after which a client
// refreshes) is only for a token that fails on its exp alone. An expired
// token for another audience or from another issuer, or one also not yet
// valid, was reported as expired: golang-jwt joins every failed claim, and
// the expiry was looked for first. A refreshed token from the same issuer
// would be refused again.
func TestVerify_ExpiredOnlyWhenNothingElseIsWrong(t *testing.T) {
	t.Parallel()
	k := keys(t)
	v := mainVerifier(t)
	past := testNow.Add(-time.Hour).Unix()
	if _, err := v.Verify(sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("exp", past))); !errors.Is(err, ErrTokenExpired) {
		t.Fatalf("expired token: %v, want ErrTokenExpired", err)
	}
	for name, c := range map[string]jwt.MapClaims{
		"another audience": claims("exp", past, "aud", "someone-else"),
		"no audience":      claims("exp", past, "aud", nil),
		"another issuer":   claims("exp", past, "iss", "https://evil.test"),
		"not yet valid":    claims("exp", past, "nbf", testNow.Add(time.Hour).Unix()),
		"issued later":     claims("exp", past, "iat", testNow.Add(time.Hour).Unix()),
		"aud of a number":  claims("exp", past, "aud", 5),
	} {
		_, err := v.Verify(sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", c))
		if !errors.Is(err, ErrInvalidToken) || errors.Is(err, ErrTokenExpired) {
			t.Errorf("expired, %s: %v, want ErrInvalidToken but not ErrTokenExpired", name, err)
		}
	}
}
