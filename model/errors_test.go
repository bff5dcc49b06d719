package model

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestClassifyHTTP_Kinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status    int
		msg       string
		want      error
		retryable bool
	}{
		{429, "Rate limit reached for requests", ErrRateLimit, true},
		{429, "You exceeded your current quota, please check your plan and billing details. (insufficient_quota)", ErrQuotaExceeded, false},
		{402, "billing_error: Billing error", ErrQuotaExceeded, false},
		{400, "invalid_request_error: Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.", ErrQuotaExceeded, false},
		{400, "Billing hard limit has been reached (type invalid_request_error, code billing_hard_limit_reached)", ErrQuotaExceeded, false},
		{401, "Incorrect API key provided", ErrAuth, false},
		{403, "forbidden", ErrAuth, false},
		{400, "This model's maximum context length is 8192 tokens (context_length_exceeded)", ErrContextLength, false},
		{400, "prompt is too long: 210000 tokens > 200000 maximum", ErrContextLength, false},
		{400, "invalid tool schema", ErrBadRequest, false},
		{500, "internal error", ErrServer, true},
		{529, "Overloaded", ErrServer, true},
	}
	for _, tc := range tests {
		e := ClassifyHTTP("P", tc.status, nil, tc.msg)
		if !errors.Is(e, tc.want) || Retryable(e) != tc.retryable {
			t.Errorf("%d %q: kind %v retryable %v, want %v %v", tc.status, tc.msg, e.Kind, Retryable(e), tc.want, tc.retryable)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		h    http.Header
		want time.Duration
	}{
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After": {now.Add(3 * time.Second).Format(http.TimeFormat)}}, 3 * time.Second},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {"-4"}}, 0},
		{http.Header{}, 0},
	}
	for _, tc := range tests {
		if got := ParseRetryAfter(tc.h, now); got != tc.want {
			t.Errorf("%v: got %v, want %v", tc.h, got, tc.want)
		}
	}
}

// A Retry-After too large for a time.Duration (a provider's "1e12" seconds,
// a date centuries ahead) is capped, never wrapped round to a negative
// delay that would read as no Retry-After at all.
func TestParseRetryAfter_HugeIsCapped(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, h := range []http.Header{
		{"Retry-After": {"1e12"}},
		{"Retry-After": {"+Inf"}},
		{"Retry-After-Ms": {"1e16"}},
		{"Retry-After": {now.AddDate(300, 0, 0).Format(http.TimeFormat)}},
		{"Retry-After": {now.AddDate(2, 0, 0).Format(http.TimeFormat)}},
	} {
		if got := ParseRetryAfter(h, now); got != MaxRetryAfter {
			t.Errorf("%v: got %v, want the cap %v", h, got, MaxRetryAfter)
		}
	}
	e := ClassifyHTTP("P", 429, http.Header{"Retry-After": {"1e12"}}, "slow down")
	if e.RetryAfter <= 0 {
		t.Errorf("RetryAfter = %v, want a positive delay", e.RetryAfter)
	}
}

// A provider's error message (up to a whole error body) is cut to a
// readable bound, marked, without splitting a rune, after it has been
// classified whole.
func TestClassifyHTTP_LongMessageIsCut(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 400) + " context_length_exceeded"
	e := ClassifyHTTP("P", 400, nil, long)
	if !errors.Is(e, ErrContextLength) {
		t.Errorf("kind %v, want ErrContextLength read from the whole message", e.Kind)
	}
	if len(e.Message) > MaxErrorMessage+len("…") || !strings.HasSuffix(e.Message, "…") || !utf8.ValidString(e.Message) {
		t.Errorf("message of %d bytes (valid UTF-8 %v) not cut to %d and marked: …%q", len(e.Message), utf8.ValidString(e.Message), MaxErrorMessage, e.Message[max(0, len(e.Message)-20):])
	}
	if short := ClassifyHTTP("P", 400, nil, "bad tool"); short.Message != "bad tool" {
		t.Errorf("short message %q changed", short.Message)
	}
}
