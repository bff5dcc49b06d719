package agent

import (
	"context"
	"errors"
	"iter"
	"log/slog"
	"time"

	"github.com/agentryhq/agentry/model"
)

// runRetry re-asks the model after a failed request (Config.Retries, Agno's
// retries / delay_between_retries / exponential_backoff): any error, not only
// the rate limits and server errors ModelRetry covers, is retried, after
// DelayBetweenRetries, doubled each attempt with ExponentialBackoff. Agno
// retries the whole run; Agentry retries the failed model request only, so
// tools that already ran are not run again. A stream that yielded anything is
// not retried (its content may have reached the consumer).
type runRetry struct {
	next        model.Model
	retries     int
	delay       time.Duration
	exponential bool
}

func (r *runRetry) Info() model.Info { return r.next.Info() }

// delayAfter is the wait after the failed attempt (0-based).
func (r *runRetry) delayAfter(attempt int) time.Duration {
	if !r.exponential {
		return r.delay
	}
	return r.delay << attempt
}

func (r *runRetry) wait(ctx context.Context, attempt int, err error) error {
	d := r.delayAfter(attempt)
	slog.WarnContext(ctx, "agent: model request failed, retrying", "attempt", attempt+1, "of", r.retries+1, "delay", d, "error", err)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func retryable(ctx context.Context, err error) bool {
	return ctx.Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

func (r *runRetry) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	for attempt := 0; ; attempt++ {
		resp, err := r.next.Invoke(ctx, req)
		if err == nil || attempt >= r.retries || !retryable(ctx, err) {
			return resp, err
		}
		if werr := r.wait(ctx, attempt, err); werr != nil {
			return nil, errors.Join(err, werr)
		}
	}
}

func (r *runRetry) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		for attempt := 0; ; attempt++ {
			started := false
			var failed error
			for c, err := range r.next.Stream(ctx, req) {
				if err != nil {
					failed = err
					break
				}
				started = true
				if !yield(c, nil) {
					return
				}
			}
			if failed == nil {
				return
			}
			if started || attempt >= r.retries || !retryable(ctx, failed) {
				yield(nil, failed)
				return
			}
			if werr := r.wait(ctx, attempt, failed); werr != nil {
				yield(nil, errors.Join(failed, werr))
				return
			}
		}
	}
}
