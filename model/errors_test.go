package model

import (
	"errors"
	"net/http"
	"testing"
	"time"
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
