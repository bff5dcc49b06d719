package model

import (
	"context"
	"errors"
)

// FallbackConfig is Agno's fallback_config: models tried in order when the
// primary model fails with a classified error before answering. Each model
// keeps its own retry policy; the primary's error is returned if all fail.
type FallbackConfig struct {
	// OnError is tried on rate limits, server and connection errors, context
	// length, exhausted quota and malformed answers; never on bad requests or
	// authentication errors, which are configuration mistakes to fix, not to
	// hide (Agno's rule). Agno's fallback_models fills this list.
	OnError []Model
	// OnRateLimit, when set, replaces OnError for rate limits.
	OnRateLimit []Model
	// OnContextOverflow, when set, replaces OnError for context-length errors.
	OnContextOverflow []Model
}

// For returns the models to try after the primary failed with err, or nil.
func (c *FallbackConfig) For(err error) []Model {
	if c == nil || err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	switch {
	case errors.Is(err, ErrRateLimit) && len(c.OnRateLimit) > 0:
		return c.OnRateLimit
	case errors.Is(err, ErrContextLength) && len(c.OnContextOverflow) > 0:
		return c.OnContextOverflow
	case errors.Is(err, ErrBadRequest) || errors.Is(err, ErrAuth) || errors.Is(err, ErrUnsupportedParam):
		return nil
	case errors.Is(err, ErrRateLimit) || errors.Is(err, ErrServer) || errors.Is(err, ErrUnreachable) ||
		errors.Is(err, ErrContextLength) || errors.Is(err, ErrQuotaExceeded) || errors.Is(err, ErrMalformedResponse):
		return c.OnError
	}
	return nil
}
