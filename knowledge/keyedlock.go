package knowledge

import (
	"context"
	"sync"
)

// keyedLock serialises work per key (a content id): two inserts of one
// content must not interleave their delete and upsert of its chunks, or
// both sets would stay. Entries live only while someone holds or waits.
// A holder or waiter may leave a cancel func, which cancel calls: a
// Delete stops the inserts of its content instead of waiting them out.
type keyedLock struct {
	mu  sync.Mutex
	m   map[string]*keyedEntry
	seq uint64
}

type keyedEntry struct {
	mu      sync.Mutex
	users   int
	cancels map[uint64]context.CancelCauseFunc
}

// lock takes key's lock and returns its release; cancel, when not nil, is
// called by a cancel of key until the release.
func (l *keyedLock) lock(key string, cancel context.CancelCauseFunc) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*keyedEntry{}
	}
	e := l.m[key]
	if e == nil {
		e = &keyedEntry{cancels: map[uint64]context.CancelCauseFunc{}}
		l.m[key] = e
	}
	e.users++
	l.seq++
	n := l.seq
	if cancel != nil {
		e.cancels[n] = cancel
	}
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		delete(e.cancels, n)
		if e.users--; e.users == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
}

// cancel calls the cancel funcs of key's holder and waiters with cause.
func (l *keyedLock) cancel(key string, cause error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.m[key]; e != nil {
		for _, c := range e.cancels {
			c(cause)
		}
	}
}
