package sessionline

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"sync"

	"github.com/agentryhq/agentry/db"
)

// Key names a session of one database handle.
type Key struct {
	DB *db.DB
	ID string
}

// line is what the registry keeps of a session while writers of it are in
// progress here.
type line struct {
	active  int         // writers joined and not left
	busy    bool        // a writer holds the turn (Acquire)
	seq     uint64      // session rows written through the line
	row     *db.Session // the last of them, as the store gave it back
	written uint64      // the registry's number of that write (see Mark)
}

// endedLines is how many ended lines the registry remembers the last write
// number of (WrittenSince): at a thousand runs a second, the last eight
// seconds or so.
const endedLines = 8192

// UnknownSeq is the seq of a writer that read its session before it joined
// (the durable queue's claim read it): any row the line holds may be newer.
const UnknownSeq = ^uint64(0)

// Registry holds the lines; a process has one (Default). The zero value is
// ready to use.
type Registry struct {
	mu      sync.Mutex
	cond    sync.Cond // waits for a line's busy to clear; L is mu
	waiting int
	m       map[Key]line
	// writes numbers the rows written through every line (Mark).
	writes uint64
	// ended holds the last write number of lines that ended, the last
	// endedLines of them (ring, oldest at next, evicts).
	ended map[Key]uint64
	ring  []endedLine
	next  int
}

type endedLine struct {
	k       Key
	written uint64
}

var defaultRegistry Registry

// Default is the process's registry.
func Default() *Registry { return &defaultRegistry }

// Join records a writer of the session in progress; it returns the line's
// seq, which the writer's read of the session (after Join) reflects. Every
// Join is followed by one Leave.
func (r *Registry) Join(k Key) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[Key]line)
	}
	l, ok := r.m[k]
	if !ok {
		l.written = r.ended[k] // a line that ended and starts again
	}
	l.active++
	r.m[k] = l
	return l.seq
}

// Leave ends a joined writer: the line goes with its last writer.
func (r *Registry) Leave(k Key) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.m[k]
	if l.active--; l.active <= 0 {
		delete(r.m, k)
		if l.written > 0 && r.ended[k] != l.written {
			r.remember(k, l.written)
		}
		return
	}
	r.m[k] = l
}

// remember records the last write number of k's line, which ended.
func (r *Registry) remember(k Key, written uint64) {
	if r.ring == nil {
		r.ring, r.ended = make([]endedLine, endedLines), make(map[Key]uint64)
	}
	if old := r.ring[r.next]; old.written > 0 && r.ended[old.k] == old.written {
		delete(r.ended, old.k)
	}
	r.ring[r.next] = endedLine{k: k, written: written}
	r.next = (r.next + 1) % len(r.ring)
	r.ended[k] = written
}

// Mark returns the number the next write through any line gets. A reader
// of a session that takes a mark before its read knows, with WrittenSince,
// whether the row it read may be older than one written here since.
func (r *Registry) Mark() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writes + 1
}

// WrittenSince reports whether a row was written through k's line since
// mark (Mark) was taken, as far as the registry remembers: the line in
// progress, or one of the last endedLines lines that ended.
func (r *Registry) WrittenSince(k Key, mark uint64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.m[k]
	if !ok {
		l.written = r.ended[k]
	}
	return l.written >= mark
}

// Acquire waits until no other writer of the session holds the turn, and
// takes it. It returns the newer row to rebase on: nil when the writer's
// read, as of seq, reflects the last row written through the line. Every
// Acquire is followed by one Release.
func (r *Registry) Acquire(k Key, seq uint64) *db.Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.m[k]
	for l.busy {
		if r.cond.L == nil {
			r.cond.L = &r.mu
		}
		r.waiting++
		r.cond.Wait()
		r.waiting--
		l = r.m[k]
	}
	l.busy = true
	r.m[k] = l
	if l.row != nil && l.seq != seq {
		return l.row
	}
	return nil
}

// Release ends the turn Acquire took; wrote is the session row the writer
// wrote (nil: none), rebased whether it took the row Acquire returned. It
// returns the seq the writer's view of the session now reflects.
func (r *Registry) Release(k Key, wrote *db.Session, seq uint64, rebased bool) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.m[k]
	l.busy = false
	switch {
	case wrote != nil:
		r.writes++
		l.seq++
		l.row, l.written = wrote, r.writes
		seq = l.seq
	case rebased:
		seq = l.seq
	}
	r.m[k] = l
	if r.waiting > 0 {
		r.cond.Broadcast()
	}
	return seq
}

// Held reports whether the registry holds a line for k (a writer of it is
// in progress).
func (r *Registry) Held(k Key) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.m[k]
	return ok
}

// MergeState returns newer, the state of a row another writer wrote, with a
// writer's changes applied: the keys whose value in now differs from read
// (the state the writer started from), and the keys in over (the ones the
// caller set) whatever their value, set as now has them; the keys of read
// that now no longer has, deleted. Values compare by their JSON form (a
// number read back and the same number set by Go code are the same).
func MergeState(read, now, over, newer map[string]any) map[string]any {
	out := make(map[string]any, len(newer)+len(now))
	maps.Copy(out, newer)
	for k, v := range now {
		if _, set := over[k]; set {
			out[k] = v
			continue
		}
		if was, ok := read[k]; !ok || !sameValue(was, v) {
			out[k] = v
		}
	}
	for k := range read {
		if _, ok := now[k]; !ok {
			delete(out, k)
		}
	}
	return out
}

func sameValue(a, b any) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && bytes.Equal(x, y)
}

// MaxChangedRetries bounds how often a writer reads and writes its session
// again after its conditional write (db.Session.Expect) found the row
// changed by another process; past it the write fails with
// db.ErrSessionChanged. Each refusal means another writer's write landed,
// so the bound is met only under a storm of writers from elsewhere.
const MaxChangedRetries = 16

// Update runs fn in a turn of k's line: fn reads the session row and
// writes it (its result: the row written, nil when none), with no other
// writer of the line in between; the writers in progress start their next
// write from that row. fn writes conditionally (db.Session.Expect, the row
// it read): when another process wrote the row in between
// (db.ErrSessionChanged), fn runs again, up to MaxChangedRetries times, and
// reads the row again each time.
func (r *Registry) Update(k Key, fn func() (*db.Session, error)) error {
	r.Join(k)
	defer r.Leave(k)
	r.Acquire(k, UnknownSeq)
	wrote, err := fn()
	for i := 0; i < MaxChangedRetries && errors.Is(err, db.ErrSessionChanged); i++ {
		wrote, err = fn()
	}
	if err != nil {
		wrote = nil
	}
	r.Release(k, wrote, UnknownSeq, false)
	return err
}
