package auth

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/internal/wirecheck"
)

// Defaults for JWTConfig's zero values.
const (
	DefaultAlgorithm     = "RS256"
	DefaultLeeway        = 10 * time.Second
	DefaultMaxTokenBytes = 8 << 10
	DefaultUserIDClaim   = "sub"
	DefaultScopesClaim   = "scopes"
)

var (
	// ErrInvalidToken: the token failed verification. Its message never contains
	// the token.
	ErrInvalidToken = errors.New("invalid token")
	// ErrTokenExpired: the token verified but its exp has passed, and
	// nothing else in its claims is wrong (an expired token for another
	// audience is only ErrInvalidToken). It also matches ErrInvalidToken.
	ErrTokenExpired = fmt.Errorf("%w: token has expired", ErrInvalidToken)
	// ErrNoSubject: the token verified but names no user (its user id claim is
	// missing, empty or only whitespace). It also matches ErrInvalidToken: a
	// principal nobody can be held to is not an authenticated caller.
	ErrNoSubject = fmt.Errorf("%w: token has no subject", ErrInvalidToken)
	// ErrBadSubject: the token verified but its user id (or session id)
	// cannot be stored: over wirecheck.MaxIDBytes, holding a control
	// character, or ending in a space. It also matches ErrInvalidToken:
	// such a caller's runs would execute and then fail to be saved.
	ErrBadSubject = fmt.Errorf("%w: token subject cannot be stored as an id", ErrInvalidToken)
)

// JWTConfig configures a JWTVerifier. Zero values take the documented defaults.
type JWTConfig struct {
	// Keys are tried in order; see JWTVerifier for kid matching. Required.
	Keys []Key
	// Algorithms is the allow-list of "alg" values; default [RS256]. "none" is
	// never accepted.
	Algorithms []string
	// UserIDClaim (default "sub"), SessionIDClaim (default: none) and
	// ScopesClaim (default "scopes") name the claims read into the Principal.
	UserIDClaim    string
	SessionIDClaim string
	ScopesClaim    string
	// Audience, when non-empty, requires "aud" to contain one of these values.
	Audience []string
	// Issuer, when set, requires "iss" to equal it.
	Issuer string
	// RequireKID refuses tokens without a "kid" header, and tokens whose kid
	// names no configured key (no fallback to keys without an ID). Every key
	// must then have an ID. Off, a kid-less token is tried against every key.
	RequireKID bool
	// Leeway is the clock skew allowed on exp, nbf and iat: nil means
	// DefaultLeeway, a zero duration none (e.g. new(time.Duration(0))).
	// Negative is an error.
	Leeway *time.Duration
	// MaxTokenBytes rejects longer tokens before any parsing; zero means
	// DefaultMaxTokenBytes.
	MaxTokenBytes int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// JWTVerifier checks bearer JWTs. Safe for concurrent use.
//
// Every token must carry exp; nbf and iat are checked when present; a date
// beyond MaxNumericDate is refused. The alg header must be in the allow-list
// and a key is only tried with algorithms of its own family (and curve / secret length). Key selection: a token with a
// kid is checked against the keys with that ID, or, when no key has that ID,
// against the keys configured without one; a token without a kid is checked
// against every key, in order; with RequireKID a token without a kid is
// rejected. Tokens with a "crit" header are rejected, and so are tokens whose
// user id claim is missing or blank (ErrNoSubject).
type JWTVerifier struct {
	cfg    JWTConfig
	parser *jwt.Parser
}

// NewJWTVerifier validates cfg and fills its defaults.
func NewJWTVerifier(cfg JWTConfig) (*JWTVerifier, error) {
	if len(cfg.Keys) == 0 {
		return nil, errors.New("auth: jwt needs at least one verification key (verification_keys or jwks_file)")
	}
	if len(cfg.Algorithms) == 0 {
		cfg.Algorithms = []string{DefaultAlgorithm}
	}
	for _, alg := range cfg.Algorithms {
		if _, ok := algorithms[alg]; !ok {
			return nil, fmt.Errorf("auth: unsupported jwt algorithm %q (supported: RS256/384/512, PS256/384/512, ES256/384/512, EdDSA, HS256/384/512)", alg)
		}
	}
	usable := 0
	for i, k := range cfg.Keys {
		if k.family == "" {
			return nil, fmt.Errorf("auth: key %d (%q) was not built by ParseKey or ParseJWKS", i, k.ID)
		}
		if !slices.ContainsFunc(cfg.Algorithms, k.fits) {
			if k.fromSet {
				// A JWKS publishes keys for algorithms this server may not
				// allow; they verify nothing here (keyFor tries a key with
				// the token's alg only), but still own their kid.
				continue
			}
			return nil, fmt.Errorf("auth: key %d (%q, %s) fits none of the allowed algorithms %v", i, k.ID, k.family, cfg.Algorithms)
		}
		if cfg.RequireKID && k.ID == "" {
			return nil, fmt.Errorf("auth: key %d (%s) has no kid, and require_kid refuses every token it could verify; give it a kid", i, k.family)
		}
		usable++
	}
	if usable == 0 {
		return nil, fmt.Errorf("auth: no verification key fits the allowed algorithms %v", cfg.Algorithms)
	}
	if cfg.UserIDClaim == "" {
		cfg.UserIDClaim = DefaultUserIDClaim
	}
	if cfg.ScopesClaim == "" {
		cfg.ScopesClaim = DefaultScopesClaim
	}
	leeway := DefaultLeeway
	if cfg.Leeway != nil {
		if leeway = *cfg.Leeway; leeway < 0 {
			return nil, fmt.Errorf("auth: leeway %s is negative; use 0 for none", leeway)
		}
	}
	cfg.Leeway = &leeway
	if cfg.MaxTokenBytes <= 0 {
		cfg.MaxTokenBytes = DefaultMaxTokenBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	opts := []jwt.ParserOption{
		jwt.WithValidMethods(cfg.Algorithms),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(leeway),
		jwt.WithStrictDecoding(),
		jwt.WithTimeFunc(cfg.Now),
	}
	if len(cfg.Audience) > 0 {
		opts = append(opts, jwt.WithAudience(cfg.Audience...))
	}
	if cfg.Issuer != "" {
		opts = append(opts, jwt.WithIssuer(cfg.Issuer))
	}
	return &JWTVerifier{cfg: cfg, parser: jwt.NewParser(opts...)}, nil
}

// Verify checks a token and returns its principal. Errors wrap ErrInvalidToken
// (ErrTokenExpired for an expired one) and never contain the token.
func (v *JWTVerifier) Verify(token string) (*Principal, error) {
	if len(token) > v.cfg.MaxTokenBytes {
		return nil, fmt.Errorf("%w: token is longer than %d bytes", ErrInvalidToken, v.cfg.MaxTokenBytes)
	}
	if strings.Count(token, ".") != 2 {
		return nil, fmt.Errorf("%w: token must have three segments", ErrInvalidToken)
	}
	claims := jwt.MapClaims{}
	if _, err := v.parser.ParseWithClaims(token, claims, v.keyFor); err != nil {
		if errors.Is(err, jwt.ErrTokenExpired) && onlyExpired(err) {
			// golang-jwt checks claims after the signature: these claims
			// are the issuer's, and an exp past any date is not expired.
			if err := datesInRange(claims); err != nil {
				return nil, err
			}
			return nil, ErrTokenExpired
		}
		return nil, fmt.Errorf("%w: %s", ErrInvalidToken, safeReason(err))
	}
	if err := datesInRange(claims); err != nil {
		return nil, err
	}
	return v.principal(claims)
}

// otherClaimErrors are golang-jwt's claim failures besides expiry.
var otherClaimErrors = []error{
	jwt.ErrTokenRequiredClaimMissing, jwt.ErrTokenInvalidAudience, jwt.ErrTokenInvalidIssuer,
	jwt.ErrTokenInvalidSubject, jwt.ErrTokenNotValidYet, jwt.ErrTokenUsedBeforeIssued,
	jwt.ErrTokenInvalidId, jwt.ErrInvalidType,
}

// onlyExpired reports whether an expired token failed on nothing else:
// golang-jwt joins every failed claim, and a token for another audience
// or issuer is invalid, not expired (a client refreshes an expired one,
// and its next token would be refused again).
func onlyExpired(err error) bool {
	return !slices.ContainsFunc(otherClaimErrors, func(e error) bool { return errors.Is(err, e) })
}

// MaxNumericDate bounds the exp, nbf and iat claims (seconds from the
// epoch, either sign): 2^53, the largest whole number of seconds a JSON
// number holds exactly (about 285 million years).
const MaxNumericDate = 1 << 53

// datesInRange refuses exp, nbf and iat beyond MaxNumericDate. golang-jwt
// converts a claim to int64 seconds without a range check: an nbf or iat
// of 1e19 or 1e300 overflows to a date in the distant past, so a token the
// issuer marked not yet valid (or issued in the future) passed, and an exp
// that far out read as long expired.
func datesInRange(claims jwt.MapClaims) error {
	for _, name := range []string{"exp", "nbf", "iat"} {
		if f, ok := claims[name].(float64); ok && math.Abs(f) > MaxNumericDate {
			return fmt.Errorf("%w: claim %q is beyond %d seconds from the epoch", ErrInvalidToken, name, int64(MaxNumericDate))
		}
	}
	return nil
}

// safeReason keeps golang-jwt's message, which describes the failure without
// echoing token content.
func safeReason(err error) string { return err.Error() }

func (v *JWTVerifier) keyFor(t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, errors.New("crit header is not supported")
	}
	alg := t.Method.Alg()
	var kid string
	if raw, ok := t.Header["kid"]; ok {
		s, ok := raw.(string)
		if !ok {
			return nil, errors.New("kid header must be a string")
		}
		kid = s
	}
	var matched []jwt.VerificationKey
	pick := func(want func(Key) bool) {
		for _, k := range v.cfg.Keys {
			if want(k) && k.fits(alg) {
				matched = append(matched, k.pub)
			}
		}
	}
	switch {
	case kid == "" && v.cfg.RequireKID:
		return nil, errors.New("token has no kid header, which this server requires (require_kid)")
	case kid != "":
		pick(func(k Key) bool { return k.ID == kid })
		if len(matched) == 0 && !slices.ContainsFunc(v.cfg.Keys, func(k Key) bool { return k.ID == kid }) {
			pick(func(k Key) bool { return k.ID == "" })
		}
	default:
		pick(func(Key) bool { return true })
	}
	switch len(matched) {
	case 0:
		return nil, fmt.Errorf("no configured key fits alg %s and the token's kid", alg)
	case 1:
		return matched[0], nil
	}
	return jwt.VerificationKeySet{Keys: matched}, nil
}

func (v *JWTVerifier) principal(claims jwt.MapClaims) (*Principal, error) {
	p := &Principal{Claims: claims}
	var err error
	if p.UserID, err = stringClaim(claims, v.cfg.UserIDClaim); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.UserID) == "" {
		return nil, fmt.Errorf("%w: claim %q is missing, empty or blank", ErrNoSubject, v.cfg.UserIDClaim)
	}
	if err := checkIDClaim(v.cfg.UserIDClaim, p.UserID); err != nil {
		return nil, err
	}
	if v.cfg.SessionIDClaim != "" {
		if p.SessionID, err = stringClaim(claims, v.cfg.SessionIDClaim); err != nil {
			return nil, err
		}
		if err := checkIDClaim(v.cfg.SessionIDClaim, p.SessionID); err != nil {
			return nil, err
		}
	}
	if p.Scopes, err = scopesClaim(claims, v.cfg.ScopesClaim); err != nil {
		return nil, err
	}
	p.Admin = slices.Contains(p.Scopes, AdminScope)
	return p, nil
}

// checkIDClaim refuses a claim used as a stored id that the stores cannot
// hold, naming the claim but never its value (token content).
func checkIDClaim(name, v string) error {
	if wirecheck.CheckID(name, v) != nil || strings.HasSuffix(v, " ") {
		return fmt.Errorf("%w: claim %q must be at most %d bytes without control characters or a trailing space", ErrBadSubject, name, wirecheck.MaxIDBytes)
	}
	return nil
}

func stringClaim(claims jwt.MapClaims, name string) (string, error) {
	raw, ok := claims[name]
	if !ok || raw == nil {
		return "", nil
	}
	s, ok := raw.(string)
	if !ok {
		return "", fmt.Errorf("%w: claim %q must be a string", ErrInvalidToken, name)
	}
	return s, nil
}

// scopesClaim accepts a JSON array of strings or one space-separated string.
func scopesClaim(claims jwt.MapClaims, name string) ([]string, error) {
	raw, ok := claims[name]
	if !ok || raw == nil {
		return nil, nil
	}
	switch s := raw.(type) {
	case string:
		return strings.Fields(s), nil
	case []any:
		out := make([]string, 0, len(s))
		for _, item := range s {
			str, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("%w: claim %q must hold strings only", ErrInvalidToken, name)
			}
			out = append(out, str)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: claim %q must be an array of strings or a space-separated string", ErrInvalidToken, name)
}
