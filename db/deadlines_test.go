package db

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// queued lists q's calls from head to tail, checking the links both ways.
func queued(t *testing.T, q *deadlines) []*boundCtx {
	t.Helper()
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []*boundCtx
	var prev *boundCtx
	for b := q.head; b != nil; b = b.next {
		if b.prev != prev || !b.queued {
			t.Fatalf("queue link broken at %d", len(out))
		}
		out = append(out, b)
		prev = b
	}
	if q.tail != prev {
		t.Fatal("queue tail is not its last call")
	}
	return out
}

// timedCall is a bound call of q whose driver asked for Done.
func timedCall(q *deadlines, deadline time.Time) *boundCtx {
	b := &boundCtx{parent: context.Background(), deadline: deadline, q: q}
	b.Done()
	return b
}

// expires reports whether b's Done closes within 10 s (its deadlines are
// milliseconds).
func expires(b *boundCtx) bool {
	select {
	case <-b.Done():
		return true
	case <-time.After(10 * time.Second):
		return false
	}
}

// Calls that ask for Done in another order than their deadlines are queued
// in deadline order, each expires no earlier than its deadline, with
// DeadlineExceeded and the query timeout as its cause, and leaves the queue.
func TestDeadlines_OutOfOrderCallsExpireInDeadlineOrder(t *testing.T) {
	t.Parallel()
	q := &deadlines{}
	start := time.Now()
	offsets := []time.Duration{60, 20, 100, 40, 80, 30} // milliseconds
	calls := make([]*boundCtx, len(offsets))
	for i, ms := range offsets {
		calls[i] = timedCall(q, start.Add(ms*time.Millisecond))
	}
	got := queued(t, q)
	for i := 1; i < len(got); i++ {
		if got[i].deadline.Before(got[i-1].deadline) {
			t.Fatalf("queue not in deadline order at %d", i)
		}
	}
	for i, b := range calls {
		if !expires(b) {
			t.Fatalf("call %d did not expire", i)
		}
		if now := time.Now(); now.Before(b.deadline) {
			t.Fatalf("call %d ended %v before its deadline", i, b.deadline.Sub(now))
		}
		if !errors.Is(b.Err(), context.DeadlineExceeded) || !errors.Is(context.Cause(b.inner), errQueryTimeout) || !b.timedOut() {
			t.Fatalf("call %d: Err %v, cause %v; want DeadlineExceeded by the query timeout", i, b.Err(), context.Cause(b.inner))
		}
	}
	if n := len(queued(t, q)); n != 0 {
		t.Fatalf("%d calls left in the queue", n)
	}
}

// A call with an earlier deadline than the armed timer's arms it again: it is
// not kept waiting for the later one.
func TestDeadlines_AnEarlierCallArmsTheTimerEarlier(t *testing.T) {
	t.Parallel()
	q := &deadlines{}
	late := timedCall(q, time.Now().Add(time.Hour))
	early := timedCall(q, time.Now().Add(10*time.Millisecond))
	if !expires(early) {
		t.Fatal("the earlier call did not expire: the timer stayed armed for the later one")
	}
	if late.Err() != nil {
		t.Fatalf("the later call ended: %v", late.Err())
	}
	late.release()
	if !errors.Is(late.Err(), context.Canceled) || late.timedOut() {
		t.Fatalf("released call: Err %v, timedOut %v; want Canceled, not timed out", late.Err(), late.timedOut())
	}
	if n := len(queued(t, q)); n != 0 {
		t.Fatalf("%d calls left in the queue", n)
	}
}

// A call whose deadline has passed when its driver asks for Done ends at once.
func TestDeadlines_APassedDeadlineEndsAtOnce(t *testing.T) {
	t.Parallel()
	q := &deadlines{}
	b := timedCall(q, time.Now().Add(-time.Millisecond))
	select {
	case <-b.Done():
	default:
		t.Fatal("Done is open after the deadline")
	}
	if !errors.Is(b.Err(), context.DeadlineExceeded) || !b.timedOut() {
		t.Fatalf("Err %v; want DeadlineExceeded", b.Err())
	}
	if n := len(queued(t, q)); n != 0 {
		t.Fatalf("%d calls queued", n)
	}
}

// Many goroutines bound calls on one queue at once; about half finish before
// their deadline and release, the rest wait for it. Every waiting call ends
// by the timeout, no finished call does, and the queue ends empty. Run with
// -race.
func TestDeadlines_ConcurrentCallsAndReleases(t *testing.T) {
	t.Parallel()
	q := &deadlines{}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			for range 200 {
				b := timedCall(q, time.Now().Add(time.Duration(1+r.IntN(5))*time.Millisecond))
				if r.IntN(2) == 0 {
					b.release()
					if b.timedOut() && b.Err() != context.DeadlineExceeded {
						t.Errorf("released call: Err %v", b.Err())
					}
					continue
				}
				if !expires(b) {
					t.Error("a waiting call did not expire")
					return
				}
				if !errors.Is(b.Err(), context.DeadlineExceeded) || !b.timedOut() {
					t.Errorf("waiting call: Err %v, cause %v; want the query timeout", b.Err(), context.Cause(b.inner))
				}
				b.release()
			}
		})
	}
	wg.Wait()
	if n := len(queued(t, q)); n != 0 {
		t.Fatalf("%d calls left in the queue", n)
	}
}

// The calls of a DB in sequence (a conversation's statements) reset the timer
// only when it fires: each is queued at the tail, and its end unlinks it.
func TestDeadlines_SequentialCallsLeaveTheTimerArmed(t *testing.T) {
	t.Parallel()
	q := &deadlines{}
	first := timedCall(q, time.Now().Add(time.Hour))
	armed := q.at
	first.release()
	for range 100 {
		b := timedCall(q, time.Now().Add(time.Hour))
		if q.at != armed {
			t.Fatal("a later call re-armed the timer")
		}
		b.release()
	}
	if n := len(queued(t, q)); n != 0 {
		t.Fatalf("%d calls left in the queue", n)
	}
	q.timer.Stop()
}

// A context a driver derives from a call's (pgx's and the MySQL driver's
// connect timeout, database/sql's rows) and context.AfterFunc on it (pgx
// watches every query so) end with the call's timed context: at the query
// timeout, the call's end and the caller's cancellation, each with
// Canceled, as children of a cancel context do (a child of
// context.WithDeadline got DeadlineExceeded at the deadline; the front's
// error names the deadline either way, see
// TestBound_QueryTimeoutEndsTheCallWithErrUnavailable). The cause tells the
// query timeout from the rest.
func TestBoundCtx_DerivedContextsEndWithTheCall(t *testing.T) {
	t.Parallel()
	q := &deadlines{}
	ends := func(t *testing.T, b *boundCtx, end func(), cause error) {
		t.Helper()
		child, cancel := context.WithCancel(b)
		defer cancel()
		timed, cancelTimed := context.WithTimeout(b, time.Hour)
		defer cancelTimed()
		ran := make(chan struct{})
		context.AfterFunc(b, func() { close(ran) })
		end()
		for name, c := range map[string]context.Context{"WithCancel": child, "WithTimeout": timed} {
			select {
			case <-c.Done():
			case <-time.After(10 * time.Second):
				t.Fatalf("the %s child did not end", name)
			}
			if err := c.Err(); err != context.Canceled || context.Cause(c) != cause {
				t.Fatalf("the %s child: Err %v, cause %v; want Canceled by %v", name, err, context.Cause(c), cause)
			}
		}
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Fatal("context.AfterFunc did not run")
		}
	}
	t.Run("query timeout", func(t *testing.T) {
		t.Parallel()
		b := &boundCtx{parent: context.Background(), deadline: time.Now().Add(20 * time.Millisecond), q: q}
		ends(t, b, func() {}, errQueryTimeout)
		if !b.timedOut() || b.Err() != context.DeadlineExceeded {
			t.Fatalf("the call: timed out %v, Err %v; want DeadlineExceeded by the query timeout", b.timedOut(), b.Err())
		}
	})
	t.Run("end of the call", func(t *testing.T) {
		t.Parallel()
		b := &boundCtx{parent: context.Background(), deadline: time.Now().Add(time.Hour), q: q}
		ends(t, b, b.release, context.Canceled)
	})
	t.Run("caller's cancellation", func(t *testing.T) {
		t.Parallel()
		parent, cancel := context.WithCancelCause(context.Background())
		b := &boundCtx{parent: parent, deadline: time.Now().Add(time.Hour), q: q}
		gaveUp := errors.New("the caller gave up")
		ends(t, b, func() { cancel(gaveUp) }, gaveUp)
		if b.timedOut() {
			t.Fatal("a caller's cancellation counted as the query timeout")
		}
		b.release()
	})
}
