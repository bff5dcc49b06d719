package agent

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentryhq/agentry/model"
)

// withRunRetry re-asks the model after a failed request (Config.Retries,
// Agno's retries / delay_between_retries / exponential_backoff), on
// model.WithRetry: any error, not only the rate limits and server errors
// ModelRetry covers, is retried, after delay, doubled each attempt when
// exponential. Agno retries the whole run; Agentry retries the failed model
// request only, so tools that already ran are not run again. A stream that
// yielded anything is not retried (its content may have reached the
// consumer).
func withRunRetry(m model.Model, retries int, delay time.Duration, exponential bool) model.Model {
	return model.WithRetry(m, model.RetryConfig{
		MaxAttempts: retries + 1,
		Retry:       retryable,
		Delay: func(attempt int, err error) time.Duration {
			d := delayAfter(delay, exponential, attempt-1)
			slog.Warn("agent: model request failed, retrying", "attempt", attempt, "of", retries+1, "delay", d, "error", err)
			return d
		},
	})
}

// delayAfter is the wait after the failed attempt (0-based).
func delayAfter(delay time.Duration, exponential bool, attempt int) time.Duration {
	if !exponential {
		return delay
	}
	return delay << attempt
}

func retryable(ctx context.Context, err error) bool {
	return ctx.Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}
