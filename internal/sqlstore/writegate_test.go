package sqlstore

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestWriteGate_AdmitsWaitersInArrivalOrder(t *testing.T) {
	t.Parallel()
	g := newWriteGate(&Dialect{SingleWriter: true})
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
		waitQueued(t, "TestWriteGate_AdmitsWaitersInArrivalOrder.func", i+1) // waiter i queues before waiter i+1 arrives
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
	g := newWriteGate(&Dialect{SingleWriter: true})
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
	if g := newWriteGate(&Dialect{SingleWriter: false}); g != nil {
		t.Error("a pooled writer has a write gate")
	}
}

// waitQueued waits until n goroutines whose stack holds frame are blocked
// entering a write gate (read from the goroutine dump: a sleep would let a
// slow goroutine queue behind a later one on a loaded machine). The frame
// keeps out the waiters of tests running in parallel, which enter gates of
// their own.
func waitQueued(t *testing.T, frame string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	buf := make([]byte, 1<<20)
	for {
		dump := string(buf[:runtime.Stack(buf, true)])
		queued := 0
		for _, g := range strings.Split(dump, "\n\n") {
			if (strings.Contains(g, "[select") || strings.Contains(g, "[chan send")) && strings.Contains(g, "writeGate.enter") && strings.Contains(g, frame) {
				queued++
			}
		}
		if queued >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters queued after 10s, want %d", queued, n)
		}
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
}
