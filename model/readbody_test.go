package model_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/model"
)

// endless yields 'x' forever.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	return len(p), nil
}

// failing yields some bytes, then an error.
type failing struct{ sent bool }

func (f *failing) Read(p []byte) (int, error) {
	if f.sent {
		return 0, errors.New("connection reset")
	}
	f.sent = true
	return copy(p, `{"par`), nil
}

func TestReadResponse(t *testing.T) {
	ctx := context.Background()
	if got, err := model.ReadResponse(ctx, "p", strings.NewReader(`{"ok":true}`)); err != nil || string(got) != `{"ok":true}` {
		t.Fatalf("a body: %q, %v", got, err)
	}
	if got, err := model.ReadResponse(ctx, "p", io.LimitReader(endless{}, model.MaxResponseBody)); err != nil || len(got) != model.MaxResponseBody {
		t.Fatalf("a body of exactly the limit: %d bytes, %v", len(got), err)
	}
	_, err := model.ReadResponse(ctx, "p", endless{})
	if !errors.Is(err, model.ErrMalformedResponse) || !strings.HasPrefix(err.Error(), "p: response larger than") {
		t.Fatalf("an endless body: %v", err)
	}
	_, err = model.ReadResponse(ctx, "p", &failing{})
	if !errors.Is(err, model.ErrMalformedResponse) || !strings.Contains(err.Error(), "connection reset") {
		t.Fatalf("a failed read: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = model.ReadResponse(cctx, "p", &failing{})
	if !errors.Is(err, context.Canceled) || errors.Is(err, model.ErrMalformedResponse) {
		t.Fatalf("a read cut by the context: %v", err)
	}
}
