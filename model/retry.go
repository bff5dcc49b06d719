package model

import (
	"context"
	"errors"
	"iter"
	"math/rand/v2"
	"time"
)

// RetryConfig configures WithRetry. Zero values take the documented defaults.
type RetryConfig struct {
	// MaxAttempts counts the first try; default 3.
	MaxAttempts int
	// BaseDelay is the first backoff delay, doubled each attempt; default 500ms.
	BaseDelay time.Duration
	// MaxDelay caps any single delay, including a provider's Retry-After; default 30s.
	MaxDelay time.Duration
	// Retry, when set, replaces the rule for which errors are retried (by
	// default Retryable: rate limits and server errors).
	Retry func(ctx context.Context, err error) bool
	// Delay, when set, replaces the backoff (by default doubling from
	// BaseDelay with jitter, honouring a provider's Retry-After, capped at
	// MaxDelay); attempt is the failed attempt, from 1.
	Delay func(attempt int, err error) time.Duration
}

func (c RetryConfig) withDefaults() RetryConfig {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	if c.BaseDelay <= 0 {
		c.BaseDelay = 500 * time.Millisecond
	}
	if c.MaxDelay <= 0 {
		c.MaxDelay = 30 * time.Second
	}
	return c
}

// WithRetry wraps m so retryable errors (rate limits, server errors) are retried
// with exponential backoff and jitter, honouring a provider's Retry-After. A
// stream is retried only if it failed before yielding any chunk.
func WithRetry(m Model, cfg RetryConfig) Model {
	return &retrying{next: m, cfg: cfg.withDefaults()}
}

type retrying struct {
	next Model
	cfg  RetryConfig
}

func (r *retrying) Info() Info { return r.next.Info() }

// AcceptsURL is the wrapped model's.
func (r *retrying) AcceptsURL(t PartType, mimeType string) bool {
	return AcceptsURL(r.next, t, mimeType)
}

func (r *retrying) Invoke(ctx context.Context, req *Request) (*Response, error) {
	for attempt := 1; ; attempt++ {
		resp, err := r.next.Invoke(ctx, req)
		if err == nil || attempt >= r.cfg.MaxAttempts || !r.retryable(ctx, err) {
			return resp, err
		}
		if werr := sleepCtx(ctx, r.delay(attempt, err)); werr != nil {
			return nil, errors.Join(err, werr)
		}
	}
}

func (r *retrying) Stream(ctx context.Context, req *Request) iter.Seq2[*Chunk, error] {
	return func(yield func(*Chunk, error) bool) {
		for attempt := 1; ; attempt++ {
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
			if started || attempt >= r.cfg.MaxAttempts || !r.retryable(ctx, failed) {
				yield(nil, failed)
				return
			}
			if werr := sleepCtx(ctx, r.delay(attempt, failed)); werr != nil {
				yield(nil, errors.Join(failed, werr))
				return
			}
		}
	}
}

func (r *retrying) retryable(ctx context.Context, err error) bool {
	if r.cfg.Retry != nil {
		return r.cfg.Retry(ctx, err)
	}
	return Retryable(err)
}

func (r *retrying) delay(attempt int, err error) time.Duration {
	if r.cfg.Delay != nil {
		return r.cfg.Delay(attempt, err)
	}
	var pe *ProviderError
	if errors.As(err, &pe) && pe.RetryAfter > 0 {
		return min(pe.RetryAfter, r.cfg.MaxDelay)
	}
	d := r.cfg.BaseDelay << (attempt - 1)
	if d <= 0 || d > r.cfg.MaxDelay {
		d = r.cfg.MaxDelay
	}
	// full jitter in [d/2, d]
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ReadsHistory answers for the wrapped model (model.HistoryReader).
func (r *retrying) ReadsHistory() bool { return ReadsHistory(r.next) }
