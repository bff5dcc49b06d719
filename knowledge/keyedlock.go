package knowledge

import "sync"

// keyedLock serialises work per key (a content id): two inserts of one
// content must not interleave their delete and upsert of its chunks, or
// both sets would stay. Entries live only while someone holds or waits.
type keyedLock struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu    sync.Mutex
	users int
}

// lock takes key's lock and returns its release.
func (l *keyedLock) lock(key string) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*keyedEntry{}
	}
	e := l.m[key]
	if e == nil {
		e = &keyedEntry{}
		l.m[key] = e
	}
	e.users++
	l.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		l.mu.Lock()
		if e.users--; e.users == 0 {
			delete(l.m, key)
		}
		l.mu.Unlock()
	}
}
