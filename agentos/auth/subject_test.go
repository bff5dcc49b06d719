package auth

import (
	"errors"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// A token whose user id (or session id) no store can hold is refused when
// it is verified, the token never echoed: such a subject used to be
// accepted, the run executed (its model paid for) and then it could not be
// saved (Postgres stores no NUL; user ids are at most 255 bytes; one
// ending in a space is refused on every backend), and a newline or other
// control character was stored as the user id.
func TestVerify_RefusesSubjectsNoStoreHolds(t *testing.T) {
	t.Parallel()
	k := keys(t)
	v := mainVerifier(t)
	for name, c := range map[string]jwt.MapClaims{
		"NUL in sub":            claims("sub", "al\x00ice"),
		"newline in sub":        claims("sub", "bob\n"),
		"sub of 256 bytes":      claims("sub", strings.Repeat("u", 256)),
		"sub ending in a space": claims("sub", "carol "),
		"NUL in session id":     claims("sid", "s\x001"),
		"long session id":       claims("sid", strings.Repeat("s", 256)),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := v.Verify(sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", c))
			if err == nil {
				t.Fatalf("accepted: principal %+v", p)
			}
			if !errors.Is(err, ErrBadSubject) || !errors.Is(err, ErrInvalidToken) {
				t.Errorf("error %v does not wrap ErrBadSubject and ErrInvalidToken", err)
			}
			if strings.Contains(err.Error(), "uuuu") || strings.Contains(err.Error(), "al\x00ice") {
				t.Errorf("error %q echoes the token's claim", err)
			}
		})
	}
	for _, sub := range []string{strings.Repeat("u", 255), "user 1", " leading", "Ünïcode-ユーザー"} {
		if _, err := v.Verify(sign(t, jwt.SigningMethodRS256, k.rsaA, "rsa-a", claims("sub", sub))); err != nil {
			t.Errorf("sub %q refused: %v", sub, err)
		}
	}
}
