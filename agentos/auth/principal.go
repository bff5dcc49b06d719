package auth

import (
	"context"
	"slices"
	"strings"
)

// AdminScope grants every permission and exempts the caller from user isolation.
const AdminScope = "agent_os:admin"

// Principal is the authenticated caller of a request.
type Principal struct {
	// UserID comes from the user id claim ("sub" by default); never blank for
	// a JWT (JWTVerifier refuses such tokens). Empty for the security key.
	UserID string
	// SessionID comes from the session id claim, when configured and present.
	SessionID string
	// Scopes are the granted scopes, e.g. "agents:read" or "agents:my-agent:run".
	Scopes []string
	// Admin is true for the static security key and for tokens carrying AdminScope.
	Admin bool
	// Claims are the verified JWT claims; nil for the static security key.
	Claims map[string]any
}

// Can reports whether the principal may perform action on resource. id names one
// object of the resource ("" for the collection as a whole, e.g. listing).
//
// Supported grant forms (a "*" segment matches any value):
//
//	agent_os:admin            everything
//	resource:action           action on every object: agents:run covers agents:<id>:run
//	resource:*                every action on every object
//	resource:id:action        action on that one object only
//	resource:id:* / resource:*:action
//
// A per-object grant never satisfies a collection-wide check (id == "").
func (p *Principal) Can(resource, id, action string) bool {
	if p == nil {
		return false
	}
	if p.Admin {
		return true
	}
	for _, g := range p.Scopes {
		if grantMatches(g, resource, id, action) {
			return true
		}
	}
	return false
}

// CanSome reports whether the principal may perform action on at least one
// object of resource, a per-object grant included: whether a tool acting on
// an object its caller names can be of any use to this principal.
func (p *Principal) CanSome(resource, action string) bool {
	if p == nil {
		return false
	}
	if p.Admin {
		return true
	}
	for _, g := range p.Scopes {
		// Ask about the object the grant itself names (its second segment;
		// a resource:action grant ignores the id), so that a per-object
		// grant counts.
		_, rest, _ := strings.Cut(g, ":")
		id, _, _ := strings.Cut(rest, ":")
		if grantMatches(g, resource, id, action) {
			return true
		}
	}
	return false
}

// HasScope reports whether the exact scope string was granted.
func (p *Principal) HasScope(scope string) bool {
	return p != nil && slices.Contains(p.Scopes, scope)
}

func grantMatches(grant, resource, id, action string) bool {
	parts := strings.Split(grant, ":")
	switch len(parts) {
	case 2:
		return segMatches(parts[0], resource) && segMatches(parts[1], action)
	case 3:
		return id != "" && segMatches(parts[0], resource) && segMatches(parts[1], id) && segMatches(parts[2], action)
	}
	return false
}

func segMatches(grant, want string) bool {
	return grant != "" && (grant == "*" || grant == want)
}

type principalKey struct{}

// NewContext returns a context carrying p.
func NewContext(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the request's principal, if authentication ran.
func FromContext(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(*Principal)
	return p, ok && p != nil
}
