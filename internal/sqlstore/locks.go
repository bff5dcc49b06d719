package sqlstore

import (
	"context"
	"time"
)

// WaitRetry waits before the next attempt to take a lock that another holder
// has: ErrMigrationLocked once deadline has passed, ctx's error when it ends
// first, nil after a short pause.
func WaitRetry(ctx context.Context, deadline time.Time) error {
	if time.Now().After(deadline) {
		return ErrMigrationLocked
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(100 * time.Millisecond):
		return nil
	}
}
