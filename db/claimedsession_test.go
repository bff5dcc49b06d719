package db_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentryhq/agentry/db"
)

func TestClaimedSession_HandedOutOnceToItsRunAndSession(t *testing.T) {
	s := &db.Session{SessionID: "s1", UserID: "u1"}
	ctx := db.WithClaimedSession(context.Background(), "r1", s)
	for _, c := range []struct {
		what         string
		ctx          context.Context
		run, session string
	}{
		{"another run", ctx, "r2", "s1"},
		{"another session", ctx, "r1", "s2"},
		{"another user's scope", db.WithUserScope(ctx, "u2"), "r1", "s1"},
		{"no claim", context.Background(), "r1", "s1"},
		{"a nil row", db.WithClaimedSession(context.Background(), "r1", nil), "r1", "s1"},
	} {
		if got, ok := db.ClaimedSession(c.ctx, c.run, c.session); ok || got != nil {
			t.Errorf("%s: handed out %v", c.what, got)
		}
	}
	// Misses take nothing: the run's own load still gets the row, once.
	got, ok := db.ClaimedSession(db.WithUserScope(ctx, "u1"), "r1", "s1")
	if !ok || got != s {
		t.Fatalf("the run's load got %v, %v; want the claimed row", got, ok)
	}
	if got, ok := db.ClaimedSession(ctx, "r1", "s1"); ok || got != nil {
		t.Errorf("a second load got %v: the claimed row is as of the claim, a later load reads", got)
	}
	// A row without a user is no scope's: a read scoped to a user does not find it either.
	anyone := db.WithClaimedSession(context.Background(), "r1", &db.Session{SessionID: "s1"})
	if _, ok := db.ClaimedSession(db.WithUserScope(anyone, "u9"), "r1", "s1"); ok {
		t.Errorf("a row without a user was handed to scope u9; a read scoped to u9 would not find it")
	}
}

func TestClaimedSession_ConcurrentLoadsTakeItOnce(t *testing.T) {
	ctx := db.WithClaimedSession(context.Background(), "r1", &db.Session{SessionID: "s1"})
	var taken atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, ok := db.ClaimedSession(ctx, "r1", "s1"); ok {
				taken.Add(1)
			}
		})
	}
	wg.Wait()
	if n := taken.Load(); n != 1 {
		t.Fatalf("the claimed row was taken %d times, want once", n)
	}
}
