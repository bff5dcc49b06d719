package db

import (
	"context"
	"sync"
	"time"
)

// deadlines fires the query timeouts of one DB's bounded calls on one
// runtime timer (ADR docs/adr/query-deadline-queue.md). A call's timed
// context is a plain cancel context, queued here by deadline when a driver
// first asks for its Done; the queue cancels it with errQueryTimeout when
// the deadline passes, and the call's end takes it out.
//
// context.WithDeadline would start a timer for every call instead. On
// Postgres and MySQL every call asks for Done, and inserting a timer that
// is the earliest of the process wakes an idle thread of the runtime
// (wakeNetPoller); removing it at the call's end leaves the next call to do
// the same. All calls of one DB share the timeout, so a new call's deadline
// is the latest: it goes at the tail and the timer, armed for the head, is
// left alone. The timer is set again only when it fires.
type deadlines struct {
	mu         sync.Mutex
	head, tail *boundCtx // queued calls, by deadline
	timer      *time.Timer
	// at is when the timer fires; zero when it is not armed.
	at time.Time
}

// add queues b (whose inner and cancel are set) until its deadline, or
// cancels it now if the deadline has passed.
func (q *deadlines) add(b *boundCtx) {
	now := time.Now()
	if !now.Before(b.deadline) {
		b.cancel(errQueryTimeout)
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	// From the tail: calls arrive nearly in deadline order (they may ask
	// for Done in another order than they were bounded in).
	after := q.tail
	for after != nil && after.deadline.After(b.deadline) {
		after = after.prev
	}
	b.prev, b.queued = after, true
	if after == nil {
		b.next, q.head = q.head, b
	} else {
		b.next, after.next = after.next, b
	}
	if b.next == nil {
		q.tail = b
	} else {
		b.next.prev = b
	}
	if q.at.IsZero() || b.deadline.Before(q.at) {
		q.arm(now, b.deadline)
	}
}

// remove takes b out of the queue, if it is there.
func (q *deadlines) remove(b *boundCtx) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.unlink(b)
}

func (q *deadlines) unlink(b *boundCtx) {
	if !b.queued {
		return
	}
	if b.prev == nil {
		q.head = b.next
	} else {
		b.prev.next = b.next
	}
	if b.next == nil {
		q.tail = b.prev
	} else {
		b.next.prev = b.prev
	}
	b.prev, b.next, b.queued = nil, nil, false
}

// arm sets the timer to fire at at (q.mu held). An armed timer that fires
// before the head's deadline only arms itself again, so removing calls never
// resets it.
func (q *deadlines) arm(now, at time.Time) {
	q.at = at
	if q.timer == nil {
		q.timer = time.AfterFunc(at.Sub(now), q.fire)
		return
	}
	q.timer.Reset(at.Sub(now))
}

// fire cancels the calls whose deadline has passed and arms the timer for
// the next one.
func (q *deadlines) fire() {
	var expired []context.CancelCauseFunc
	q.mu.Lock()
	now := time.Now()
	for b := q.head; b != nil && !now.Before(b.deadline); b = q.head {
		q.unlink(b)
		expired = append(expired, b.cancel)
	}
	q.at = time.Time{}
	if q.head != nil {
		q.arm(now, q.head.deadline)
	}
	q.mu.Unlock()
	for _, cancel := range expired {
		cancel(errQueryTimeout)
	}
}
