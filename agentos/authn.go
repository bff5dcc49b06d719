package agentos

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
)

// errNoUserID: user isolation is on and a non-admin token carries no user id.
var errNoUserID = errors.New("agentos: token has no user id claim; user isolation needs one")

// authenticate checks the bearer token (unless the path is excluded or auth is
// off), puts the Principal in the context and, with user isolation, scopes the
// context's database access to the caller. Tokens and secrets are never logged.
func (s *Server) authenticate(next http.Handler) http.Handler {
	a := s.cfg.Auth
	if !a.Authenticator.Enabled() {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if excluded(a.ExcludedPaths, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		token, fromCookie, detail := s.bearerToken(r)
		if detail != "" {
			unauthorized(w, detail)
			return
		}
		if fromCookie && !s.sameSiteRequest(r) {
			s.log.LogAttrs(r.Context(), slog.LevelWarn, "cross-site request refused",
				slog.String("request_id", requestID(r.Context())), slog.String("method", r.Method),
				slog.String("origin", r.Header.Get("Origin")))
			writeError(w, http.StatusForbidden, "Cross-site request refused: a request authenticated by cookie that changes state "+
				"must come from an allowed Origin or carry the "+CSRFHeader+" header")
			return
		}
		p, err := a.Authenticator.Authenticate(token)
		if err != nil {
			s.log.LogAttrs(r.Context(), slog.LevelDebug, "authentication failed",
				slog.String("request_id", requestID(r.Context())), slog.String("reason", err.Error()))
			switch {
			case errors.Is(err, auth.ErrMissingCredentials):
				unauthorized(w, "Authorization header required")
			case errors.Is(err, auth.ErrTokenExpired):
				invalidToken(w, "Token has expired", "The access token expired")
			case errors.Is(err, auth.ErrNoSubject):
				invalidToken(w, "Token has no subject", "The access token names no subject")
			default:
				invalidToken(w, "Invalid authentication token", "The access token is invalid")
			}
			return
		}
		ctx, err := scopeContext(auth.NewContext(r.Context(), p), s.cfg.UserIsolation)
		if err != nil {
			// Unreachable with JWTVerifier (it refuses subject-less tokens);
			// kept so a principal without a user id is never served unscoped.
			invalidToken(w, "Token has no subject", "The access token names no subject")
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// bearerToken reads the token from the configured source; fromCookie says the
// cookie supplied it; detail is the 401 message when there is none.
func (s *Server) bearerToken(r *http.Request) (token string, fromCookie bool, detail string) {
	src := s.cfg.Auth.TokenSource
	if src == TokenFromHeader || src == TokenFromBoth {
		if h := r.Header.Get("Authorization"); h != "" {
			scheme, tok, ok := strings.Cut(h, " ")
			tok = strings.TrimSpace(tok)
			if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
				return "", false, "Invalid authorization header format"
			}
			return tok, false, ""
		}
	}
	if src == TokenFromCookie || src == TokenFromBoth {
		if c, err := r.Cookie(s.cfg.Auth.CookieName); err == nil && c.Value != "" {
			return c.Value, true, ""
		}
	}
	if src == TokenFromCookie {
		return "", false, "Authentication cookie required"
	}
	return "", false, "Authorization header required"
}

// CSRFHeader vouches, with any non-empty value, that a cookie-authenticated
// request comes from a page allowed to make it. A cross-site form or image
// cannot set a header, and a script on another origin can only add one after
// a CORS preflight, which the server answers only for allowed origins.
const CSRFHeader = "X-CSRF-Token"

// sameSiteRequest applies the cross-site request forgery check to a request
// whose token came from the cookie (the browser attaches the cookie to
// requests any site makes): a state-changing method (POST, PUT, PATCH, DELETE)
// needs an Origin on the CORS allow-list or the CSRFHeader. Safe methods pass:
// they change nothing and CORS keeps their responses from other origins.
func (s *Server) sameSiteRequest(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	if r.Header.Get(CSRFHeader) != "" {
		return true
	}
	origin := r.Header.Get("Origin")
	return origin != "" && origin != "null" && slices.Contains(s.cfg.CORSOrigins, origin)
}

// unauthorized answers a request that carried no usable credentials: a bare
// "Bearer" challenge (RFC 6750 §3.1 wants no error code then).
func unauthorized(w http.ResponseWriter, detail string) {
	w.Header().Set("WWW-Authenticate", "Bearer")
	writeError(w, http.StatusUnauthorized, detail)
}

// invalidToken answers a token that failed verification with RFC 6750's
// invalid_token challenge. description is a fixed text: never token content.
func invalidToken(w http.ResponseWriter, detail, description string) {
	w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="`+description+`"`)
	writeError(w, http.StatusUnauthorized, detail)
}

// excluded matches exact paths and "prefix*" patterns. As in Agno, an exact
// path also matches with trailing slashes ("/health/" when "/health" is
// excluded); only trailing slashes are dropped, so a path below an excluded
// one, or one that merely starts with it, still needs a token.
func excluded(patterns []string, path string) bool {
	trimmed := strings.TrimRight(path, "/")
	for _, p := range patterns {
		if prefix, ok := strings.CutSuffix(p, "*"); ok {
			if strings.HasPrefix(path, prefix) {
				return true
			}
		} else if p == path || p != "" && p == trimmed {
			return true
		}
	}
	return false
}

// scopeContext applies per-user isolation: when isolation is on and the
// context's principal is not an admin, the returned context carries
// db.WithUserScope(principal.UserID), so the db layer limits every query to
// that user. Admins, the security key and unauthenticated (open) servers are
// not scoped. A non-admin principal without a user id is errNoUserID.
func scopeContext(ctx context.Context, isolation bool) (context.Context, error) {
	if !isolation {
		return ctx, nil
	}
	p, ok := auth.FromContext(ctx)
	if !ok || p.Admin {
		return ctx, nil
	}
	if p.UserID == "" {
		return ctx, errNoUserID
	}
	return db.WithUserScope(ctx, p.UserID), nil
}

// actingUser is the one rule for "which user does a request act as". Under
// user isolation a non-admin caller acts as its token's user: a user_id in
// the query or body can neither widen nor change that. Any other caller
// (admin, security key, open server) acts as the user_id it names, or for
// every user when it names none, except where a run or session is started
// or continued (runUser).
type actingUser struct {
	id     string
	scoped bool
}

// actAs applies the rule to a request's context and the user_id it names.
func actAs(ctx context.Context, requested string) actingUser {
	if u, ok := db.UserScope(ctx); ok {
		return actingUser{id: u, scoped: true}
	}
	return actingUser{id: requested}
}

// runUser is the user a run started or continued (and a session created)
// is attributed to. As in Agno, a token names its own user: under user
// isolation a non-admin caller acts as its token's user (actAs), and any
// other caller with a token (an admin, or every caller when isolation is
// off) acts as its token's user too, whatever user_id the request names.
// Only callers without a token user (the security key, an open server) act
// as the user_id they name.
func runUser(ctx context.Context, requested string) actingUser {
	if u, ok := db.UserScope(ctx); ok {
		return actingUser{id: u, scoped: true}
	}
	if p, ok := auth.FromContext(ctx); ok && p.UserID != "" {
		return actingUser{id: p.UserID}
	}
	return actingUser{id: requested}
}

// runSession is the session a run request names. As in Agno, the token's
// session id (the session_id_claim, when configured and present) overrides
// the session_id of the request.
func runSession(ctx context.Context, requested string) string {
	if p, ok := auth.FromContext(ctx); ok && p.SessionID != "" {
		return p.SessionID
	}
	return requested
}

// anyone reports whether the caller acts for every user.
func (u actingUser) anyone() bool { return !u.scoped && u.id == "" }

// owns reports whether the caller may see a row (or a run in flight) that
// owner owns.
func (u actingUser) owns(owner string) bool { return u.anyone() || owner == u.id }

// scope limits ctx's database access to the user acted as (a scoped
// context already is).
func (u actingUser) scope(ctx context.Context) context.Context {
	if u.scoped || u.anyone() {
		return ctx
	}
	return db.WithUserScope(ctx, u.id)
}

// requireScope returns middleware answering 403 unless the caller may perform
// action on resource; idParam names the chi URL parameter holding the object
// id ("" for collection routes). It allows everything when Authorization is
// off or authentication is disabled.
func (s *Server) requireScope(resource, action, idParam string) func(http.Handler) http.Handler {
	return s.scoped(resource, action, func(p *auth.Principal, r *http.Request) bool {
		id := ""
		if idParam != "" {
			id = chi.URLParam(r, idParam)
		}
		return p.Can(resource, id, action)
	})
}

// requireSomeScope is requireScope for a filtered listing: it answers 403
// unless the caller may perform action on at least one object of resource
// (auth.Principal.CanSome); the handler then lists only the objects the
// caller may read (mayRead).
func (s *Server) requireSomeScope(resource, action string) func(http.Handler) http.Handler {
	return s.scoped(resource, action, func(p *auth.Principal, _ *http.Request) bool { return p.CanSome(resource, action) })
}

// scoped is the middleware of requireScope and requireSomeScope: 403
// unless allowed says the caller's principal may go on.
func (s *Server) scoped(resource, action string, allowed func(p *auth.Principal, r *http.Request) bool) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if !s.cfg.Auth.Authorization || !s.cfg.Auth.Authenticator.Enabled() {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, ok := auth.FromContext(r.Context())
			if !ok {
				// An excluded path reached a scoped route: nothing to check against.
				writeError(w, http.StatusForbidden, "Insufficient permissions")
				return
			}
			if !allowed(p, r) {
				writeError(w, http.StatusForbidden, "Insufficient permissions: requires "+resource+":"+action)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// mayRead reports whether a filtered listing shows object id of resource
// to the caller: always when authorization is off, else when the caller's
// scopes grant reading it.
func (s *Server) mayRead(r *http.Request, resource, id string) bool {
	if !s.cfg.Auth.Authorization || !s.cfg.Auth.Authenticator.Enabled() {
		return true
	}
	p, ok := auth.FromContext(r.Context())
	return ok && p.Can(resource, id, "read")
}
