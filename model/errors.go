package model

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentryhq/agentry/internal/clip"
)

// Sentinel error kinds. A *ProviderError unwraps to exactly one of them, so callers
// test with errors.Is(err, model.ErrRateLimit).
var (
	ErrRateLimit     = errors.New("model: rate limited")
	ErrContextLength = errors.New("model: context length exceeded")
	ErrAuth          = errors.New("model: authentication failed")
	ErrServer        = errors.New("model: provider server error")
	ErrBadRequest    = errors.New("model: bad request")
	// ErrQuotaExceeded: the account is out of credit or quota (OpenAI's 429
	// insufficient_quota, an HTTP 402, Anthropic's billing_error and "credit
	// balance is too low", a daily Gemini quota). Unlike ErrRateLimit,
	// waiting does not help.
	ErrQuotaExceeded = errors.New("model: quota exceeded (check the provider account's plan and billing)")
	// ErrMalformedResponse is returned when a provider's answer or stream cannot
	// be decoded (invalid JSON, truncated stream, unknown frame).
	ErrMalformedResponse = errors.New("model: malformed provider response")
)

// MaxErrorMessage bounds a ProviderError's Message from ClassifyHTTP (in
// bytes, before the "…" that marks a cut): a provider's error text can be a
// whole error body, which would otherwise fill the error, the logs and the
// stored run.
const MaxErrorMessage = 512

// MaxRetryAfter caps the delay ParseRetryAfter returns: a provider asking for
// longer (or for more than a time.Duration holds) is read as asking for this.
const MaxRetryAfter = 24 * time.Hour

// ProviderError is an error answered by a model provider.
type ProviderError struct {
	Provider   string
	StatusCode int
	// Kind is one of the sentinel errors above.
	Kind    error
	Message string
	// RetryAfter is the delay the provider asked for (Retry-After), zero if none.
	RetryAfter time.Duration
	// Err is the underlying failure, if any (a *net.DNSError, say).
	Err error
}

func (e *ProviderError) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("%s: %v (HTTP %d): %s", e.Provider, e.Kind, e.StatusCode, e.Message)
	}
	return fmt.Sprintf("%s: %v: %s", e.Provider, e.Kind, e.Message)
}

// Unwrap returns the kind and, when there is one, the underlying failure.
func (e *ProviderError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Retryable reports whether an error is worth retrying: rate limits, server
// errors and unanswered requests are (but not a host name that does not
// exist); bad requests, auth and context-length errors are not.
func Retryable(err error) bool {
	return errors.Is(err, ErrRateLimit) || errors.Is(err, ErrServer) ||
		(errors.Is(err, ErrUnreachable) && !hostNotFound(err))
}

// Blocked is the error of an answer a provider blocked before any content
// (a content filter, a safety block, a refusal; how says which, in the
// provider's words, e.g. "blocked (finishReason SAFETY)"): a non-retryable
// ErrBadRequest, since nothing reads a Response's StopReason and an empty
// answer would complete the run with no content and no reason. hint tells
// the caller what to do ("rephrase the prompt").
func Blocked(provider, how, hint string) *ProviderError {
	return &ProviderError{Provider: provider, Kind: ErrBadRequest, Message: "the answer was " + how + " before any content; " + hint}
}

// ClassifyHTTP maps an HTTP status and error text to a ProviderError. message is
// the provider's error text; it is checked for context-length wording because
// providers answer those with a plain 400, and kept cut to MaxErrorMessage
// bytes.
func ClassifyHTTP(provider string, status int, header http.Header, message string) *ProviderError {
	// The kind is read from the whole message; the error keeps a readable
	// part of it.
	e := &ProviderError{Provider: provider, StatusCode: status, Message: clip.Mark(message, MaxErrorMessage, "…")}
	lower := strings.ToLower(message)
	switch {
	case strings.Contains(lower, "insufficient_quota") || strings.Contains(lower, "exceeded your current quota") ||
		status == http.StatusPaymentRequired || strings.Contains(lower, "credit balance is too low") ||
		strings.Contains(lower, "billing_hard_limit_reached"):
		// 402, Anthropic's "Your credit balance is too low" and OpenAI's
		// billing_hard_limit_reached (both 400s) are billing too.
		e.Kind = ErrQuotaExceeded
	case status == http.StatusTooManyRequests:
		e.Kind = ErrRateLimit
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Kind = ErrAuth
	case strings.Contains(lower, "context_length") || strings.Contains(lower, "context length") ||
		strings.Contains(lower, "maximum context") || strings.Contains(lower, "too long") ||
		strings.Contains(lower, "prompt is too long") ||
		strings.Contains(lower, "exceeds the maximum number of tokens"):
		e.Kind = ErrContextLength
	case status >= 500 || status == 529 || status == http.StatusRequestTimeout || status == http.StatusConflict:
		e.Kind = ErrServer
	default:
		e.Kind = ErrBadRequest
	}
	if header != nil {
		e.RetryAfter = ParseRetryAfter(header, time.Now())
	}
	return e
}

// ParseRetryAfter reads Retry-After (seconds or HTTP date) and the millisecond
// variant retry-after-ms some providers send. It returns zero when absent.
func ParseRetryAfter(h http.Header, now time.Time) time.Duration {
	// The float is compared before it becomes a Duration: converting one
	// beyond the int64 range gives a negative delay.
	if ms := h.Get("retry-after-ms"); ms != "" {
		if v, err := strconv.ParseFloat(ms, 64); err == nil && v >= 0 {
			return time.Duration(min(v*float64(time.Millisecond), float64(MaxRetryAfter)))
		}
	}
	ra := h.Get("Retry-After")
	if ra == "" {
		return 0
	}
	if v, err := strconv.ParseFloat(ra, 64); err == nil && v >= 0 {
		return time.Duration(min(v*float64(time.Second), float64(MaxRetryAfter)))
	}
	if t, err := http.ParseTime(ra); err == nil {
		if d := t.Sub(now); d > 0 {
			return min(d, MaxRetryAfter)
		}
	}
	return 0
}

// RedactSecrets returns an error body with every secret given (an API key,
// a bearer token) blanked out, for a provider to apply before any of the
// body becomes an error message: providers quote a key they refuse, and a
// gateway page may echo the request's headers. It works on the whole body,
// so an excerpt cut from it cannot keep part of a secret. Secrets shorter
// than 8 bytes are left alone (no real credential is that short, and
// blanking them would mangle ordinary text).
func RedactSecrets(body []byte, secrets ...string) []byte {
	for _, s := range secrets {
		if len(s) >= 8 {
			body = bytes.ReplaceAll(body, []byte(s), []byte("[redacted]"))
		}
	}
	return body
}
