package db

import "context"

type scopeKey struct{}

// WithUserScope returns a context whose reads and writes are limited to userID.
// Drivers apply the scope inside their queries: another user's rows are never
// read, listed, changed or deleted, and look exactly like missing rows.
func WithUserScope(ctx context.Context, userID string) context.Context {
	return context.WithValue(ctx, scopeKey{}, userID)
}

// UserScope reports the user a context is limited to, if any.
func UserScope(ctx context.Context) (userID string, ok bool) {
	userID, ok = ctx.Value(scopeKey{}).(string)
	return userID, ok
}
