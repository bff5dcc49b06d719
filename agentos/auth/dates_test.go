package auth

import (
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// A date claim too large for golang-jwt's int64 conversion overflowed to
// the distant past: a token not valid before 1e19 seconds (or issued then)
// was accepted, and one expiring then read as expired. Such a claim is
// refused as invalid, naming it; dates up to MaxNumericDate still compare.
func TestVerify_DateClaimsOutOfRange(t *testing.T) {
	t.Parallel()
	k := keys(t)
	v := mainVerifier(t)
	for name, c := range map[string]jwt.MapClaims{
		"nbf 1e19":   claims("nbf", 1e19),
		"nbf 1e300":  claims("nbf", 1e300),
		"iat 1e19":   claims("iat", 1e19),
		"iat -1e300": claims("iat", -1e300),
		"exp 1e19":   claims("exp", 1e19),
		"exp 1e300":  claims("exp", 1e300),
		"exp -1e300": claims("exp", -1e300),
	} {
		p, err := v.Verify(sign(t, jwt.SigningMethodHS256, k.secret, "hs", c))
		if !errors.Is(err, ErrInvalidToken) || errors.Is(err, ErrTokenExpired) {
			t.Errorf("%s: principal %v, err %v; want invalid, not expired", name, p, err)
		}
	}
	far := float64(MaxNumericDate)
	for name, tc := range map[string]struct {
		c    jwt.MapClaims
		want error
	}{
		"exp at the bound":       {claims("exp", far), nil},
		"nbf at the bound":       {claims("nbf", far), ErrInvalidToken},
		"iat at the bound":       {claims("iat", far), ErrInvalidToken},
		"exp at minus the bound": {claims("exp", -far), ErrTokenExpired},
		"nbf in an hour":         {claims("nbf", testNow.Add(time.Hour).Unix()), ErrInvalidToken},
	} {
		_, err := v.Verify(sign(t, jwt.SigningMethodHS256, k.secret, "hs", tc.c))
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: err %v, want %v", name, err, tc.want)
		}
	}
}
