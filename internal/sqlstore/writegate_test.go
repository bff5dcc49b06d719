package sqlstore

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestWriteGate_AdmitsWaitersInArrivalOrder(t *testing.T) {
	t.Parallel()
	g := newWriteGate(&Dialect{Name: SQLite})
	ctx := context.Background()
	if err := g.enter(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 8
	order := make(chan int, n)
	for i := range n {
		go func() {
			if err := g.enter(ctx); err != nil {
				t.Error(err)
				return
			}
			order <- i
			g.leave()
		}()
		time.Sleep(5 * time.Millisecond) // waiter i queues before waiter i+1 arrives
	}
	g.leave()
	for want := range n {
		if got := <-order; got != want {
			t.Fatalf("waiter %d entered in position %d", got, want)
		}
	}
}

func TestWriteGate_CancelledWaiterLeaves(t *testing.T) {
	t.Parallel()
	g := newWriteGate(&Dialect{Name: SQLite})
	if err := g.enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := g.enter(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("enter on a held gate = %v, want the context's error", err)
	}
	g.leave()
	if err := g.enter(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.leave()
}

func TestWriteGate_NoneForPooledWriters(t *testing.T) {
	t.Parallel()
	for _, name := range []string{Postgres, MySQL} {
		if g := newWriteGate(&Dialect{Name: name}); g != nil {
			t.Errorf("%s has a write gate", name)
		}
	}
}
