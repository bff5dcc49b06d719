package openai

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentryhq/agentry/model"
)

// silentServer accepts requests and never answers them (until the test ends).
func silentServer(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: lets srv.Close finish
	return srv
}

// A server that never answers must not hold a caller without a deadline:
// each request is bounded by Config.Timeout and fails as unreachable.
func TestEmbed_HungServerTimesOut(t *testing.T) {
	t.Parallel()
	srv := silentServer(t)
	e, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m", Dimensions: 3,
		Timeout: 50 * time.Millisecond, Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := e.Embed(context.Background(), []string{"x"})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, model.ErrUnreachable) {
			t.Fatalf("err = %v, want model.ErrUnreachable", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("took %v for 3 attempts of 50ms", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Embed still waiting on a server that never answers after 10s")
	}
}

// The zero Config bounds requests by DefaultTimeout; a negative Timeout
// leaves only ctx's deadline.
func TestNew_DefaultTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want time.Duration }{
		{0, DefaultTimeout},
		{time.Second, time.Second},
		{-1, -1},
	} {
		e, err := New(Config{Model: "m", Dimensions: 3, Timeout: tc.in})
		if err != nil {
			t.Fatal(err)
		}
		if e.cfg.Timeout != tc.want {
			t.Errorf("Timeout %v: got %v, want %v", tc.in, e.cfg.Timeout, tc.want)
		}
	}
	if DefaultTimeout <= 0 {
		t.Fatal("DefaultTimeout must bound requests")
	}
}

// The caller's own cancellation is reported as such, not as a timeout of
// the server.
func TestEmbed_CallerDeadlineWins(t *testing.T) {
	t.Parallel()
	srv := silentServer(t)
	e, err := New(Config{BaseURL: srv.URL + "/v1", APIKey: "k", Model: "m", Dimensions: 3, Retry: fastRetry()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, model.ErrUnreachable) {
		t.Fatalf("err = %v, want the caller's context.DeadlineExceeded", err)
	}
}

// stallingServer answers 200 and the start of a body, then never the rest
// (until the test ends). calls counts requests.
func stallingServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	release := make(chan struct{})
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[{"index":0,`))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) })
	return srv, &calls
}

// A server that stops in the middle of its answer is timed out as one that
// never answers (unreachable, retried); the caller's own deadline there is
// the caller's, not a server error, and is not retried.
func TestEmbed_StallInTheAnswer(t *testing.T) {
	t.Parallel()
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		srv, calls := stallingServer(t)
		e, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m", Dimensions: 3, Timeout: 50 * time.Millisecond, Retry: fastRetry()})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.Embed(context.Background(), []string{"x"})
		if !errors.Is(err, model.ErrUnreachable) || errors.Is(err, model.ErrServer) || calls.Load() != 3 {
			t.Fatalf("err = %v after %d calls, want model.ErrUnreachable after 3", err, calls.Load())
		}
	})
	t.Run("caller deadline", func(t *testing.T) {
		t.Parallel()
		srv, calls := stallingServer(t)
		e, err := New(Config{BaseURL: srv.URL + "/v1", Model: "m", Dimensions: 3, Retry: fastRetry()})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err = e.Embed(ctx, []string{"x"})
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, model.ErrServer) || errors.Is(err, model.ErrUnreachable) || calls.Load() != 1 {
			t.Fatalf("err = %v after %d calls, want only the caller's context.DeadlineExceeded", err, calls.Load())
		}
	})
}
