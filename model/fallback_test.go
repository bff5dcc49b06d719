package model

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
)

func TestFallbackConfig_PicksTheListByErrorKind(t *testing.T) {
	t.Parallel()
	general, rate, overflow := []Model{nil}, []Model{nil, nil}, []Model{nil, nil, nil}
	all := &FallbackConfig{OnError: general, OnRateLimit: rate, OnContextOverflow: overflow}
	onlyGeneral := &FallbackConfig{OnError: general}
	pe := func(kind error) error { return fmt.Errorf("call: %w", &ProviderError{Provider: "X", Kind: kind}) }
	tests := []struct {
		name string
		cfg  *FallbackConfig
		err  error
		want int
	}{
		{"rate limit, own list", all, pe(ErrRateLimit), 2},
		{"context length, own list", all, pe(ErrContextLength), 3},
		{"rate limit, general list", onlyGeneral, pe(ErrRateLimit), 1},
		{"context length, general list", onlyGeneral, pe(ErrContextLength), 1},
		{"server error", all, pe(ErrServer), 1},
		{"no answer at all", all, Unreachable("X", "http://127.0.0.1:1", syscall.ECONNREFUSED), 1},
		{"a host that does not resolve", all, Unreachable("X", "https://llm.example.test", &net.DNSError{Err: "no such host", Name: "llm.example.test", IsNotFound: true}), 1},
		{"quota", all, pe(ErrQuotaExceeded), 1},
		{"malformed answer", all, pe(ErrMalformedResponse), 1},
		{"bad request is not hidden", all, pe(ErrBadRequest), 0},
		{"auth is not hidden", all, pe(ErrAuth), 0},
		{"cancellation", all, context.Canceled, 0},
		{"unclassified", all, errors.New("boom"), 0},
		{"no config", nil, pe(ErrServer), 0},
	}
	for _, tc := range tests {
		if got := len(tc.cfg.For(tc.err)); got != tc.want {
			t.Errorf("%s: %d fallbacks, want %d", tc.name, got, tc.want)
		}
	}
}

func TestUsage_AddKeepsFirstTimeToFirstToken(t *testing.T) {
	t.Parallel()
	u := Usage{InputTokens: 1, Duration: 1.5, TimeToFirstToken: 0.2, Cost: 0.01}
	u.Add(Usage{InputTokens: 2, Duration: 0.5, TimeToFirstToken: 0.1, Cost: 0.02})
	if u.InputTokens != 3 || u.Duration != 2 || u.TimeToFirstToken != 0.2 || u.Cost < 0.0299 || u.Cost > 0.0301 {
		t.Errorf("%+v", u)
	}
}
