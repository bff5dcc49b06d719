package model

import (
	"context"
	"errors"
)

// Do calls fn until it succeeds, fails with an error the rules do not retry,
// or MaxAttempts is reached, sleeping between attempts as WithRetry does.
// Clients that are not a Model (an embeddings API) share the same rules.
func (c RetryConfig) Do(ctx context.Context, fn func(ctx context.Context) error) error {
	r := &retrying{cfg: c.withDefaults()}
	for attempt := 1; ; attempt++ {
		err := fn(ctx)
		if err == nil || attempt >= r.cfg.MaxAttempts || !r.retryable(ctx, err) {
			return err
		}
		if werr := sleepCtx(ctx, r.delay(attempt, err)); werr != nil {
			return errors.Join(err, werr)
		}
	}
}
