package db

import "context"

type scopeKey struct{}

// WithUserScope returns a context whose reads and writes are limited to userID.
// Drivers apply the scope inside their queries: another user's rows are never
// read, listed, changed or deleted, and look exactly like missing rows. The
// user id is matched byte for byte on every backend ("alice ", "Alice" and
// "alice" are three users, whatever MySQL's collations say); a scope ending
// in a space can read but not write (ErrInvalidRecord: MySQL would take it
// for the id without the space in its keys).
func WithUserScope(ctx context.Context, userID string) context.Context {
	return context.WithValue(ctx, scopeKey{}, userID)
}

// UserScope reports the user a context is limited to, if any.
func UserScope(ctx context.Context) (userID string, ok bool) {
	userID, ok = ctx.Value(scopeKey{}).(string)
	return userID, ok
}
