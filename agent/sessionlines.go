package agent

import (
	"bytes"
	"encoding/json"
	"maps"
	"sync"

	"github.com/agentryhq/agentry/db"
)

// Runs of one session that overlap in this process each read the session
// row when they start and write it when they save: its session_state with
// the run's changes, its session_metrics with the run's tokens added. A run
// that wrote the row it read, plus its own changes, would drop what an
// overlapping run wrote in between. The session line of a session keeps
// the last row its runs wrote here, and lets one of them compute and write
// the row at a time; a run that read the session before another run's write
// writes its own changes over that newer row (rebase).
//
// The line covers the runs of one *db.DB handle, whatever agent or team
// runs them (agents built per request included). Processes that share a
// database do not see each other's lines: across them the last write of
// the session row wins, as in Agno.

// lineKey names a session of one database handle.
type lineKey struct {
	d  *db.DB
	id string
}

// sessionLine is what the registry keeps of a session while runs of it are
// in progress here.
type sessionLine struct {
	active int         // runs joined and not ended
	busy   bool        // a run is computing and writing the session row
	seq    uint64      // session rows the joined runs wrote
	row    *db.Session // the last of them, as the store gave it back
}

// unknownSeq is the seq of a run that read its session before it joined
// (the durable queue's claim read it): any row the line holds may be newer.
const unknownSeq = ^uint64(0)

// sessionLines is the registry; a process has one (lines).
type sessionLines struct {
	mu      sync.Mutex
	cond    sync.Cond // waits for a line's busy to clear; L is mu
	waiting int
	m       map[lineKey]sessionLine
}

var lines sessionLines

// join records a run of the session in progress; it returns the line's seq,
// which the run's read of the session (after join) reflects.
func (r *sessionLines) join(k lineKey) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[lineKey]sessionLine)
	}
	l := r.m[k]
	l.active++
	r.m[k] = l
	return l.seq
}

// leave ends a joined run: the line goes with its last run.
func (r *sessionLines) leave(k lineKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.m[k]
	if l.active--; l.active <= 0 {
		delete(r.m, k)
		return
	}
	r.m[k] = l
}

// acquire waits until no other run of the session computes or writes its
// row, and takes that turn. It returns the newer row to rebase on (nil when
// the run's read, as of seq, is the last row written here).
func (r *sessionLines) acquire(k lineKey, seq uint64) *db.Session {
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

// release ends the turn acquire took; wrote is the session row the run
// wrote (nil: none). It returns the seq the run's view of the session now
// reflects.
func (r *sessionLines) release(k lineKey, wrote *db.Session, seq uint64, rebased bool) uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.m[k]
	l.busy = false
	switch {
	case wrote != nil:
		l.seq++
		l.row = wrote
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

// lineKey is the run's session line.
func (st *state) lineKey() lineKey {
	return lineKey{d: st.a.conf().DB, id: st.out.SessionID}
}

// joinLine joins the run's session line before the run reads its session;
// claimed is whether the session was read already (see unknownSeq).
func (st *state) joinLine(claimed bool) {
	seq := lines.join(st.lineKey())
	if claimed {
		seq = unknownSeq
	}
	st.extras().lineSeq, st.joined = seq, true
}

// leaveLine leaves the run's session line, if it joined one.
func (st *state) leaveLine() {
	if st.joined {
		lines.leave(st.lineKey())
		st.joined = false
	}
}

// storedState is the session state a run derives from the session row s
// (nil: none stored yet) before the call's WithSessionState: the stored
// state, or Config.SessionState when there is no row.
func (st *state) storedState(s *db.Session) map[string]any {
	base := st.a.conf().SessionState
	if s != nil && len(s.SessionData) > 0 {
		if m, ok := db.SessionStateOfStored(s.SessionData); ok {
			base = m
		}
	}
	return base
}

// rebase makes base, a session row an overlapping run wrote after this run
// read its session, the row this run's next write starts from.
func (st *state) rebase(base *db.Session) {
	x := st.extras()
	if !x.rebased {
		x.rebased, x.readSession = true, st.session
	}
	st.session = base
}

// stateToWrite is the session_state the run writes: its own state, or,
// after a rebase, the newer row's state with the run's changes over it
// (see mergeState).
func (st *state) stateToWrite() map[string]any {
	x := st.ext
	if x == nil {
		return nil
	}
	if !x.rebased || x.sessionState == nil {
		return x.sessionState
	}
	return mergeState(st.storedState(x.readSession), x.sessionState, st.opts.get().sessionState, st.storedState(st.session))
}

// mergeState returns newer with the run's changes applied: the keys whose
// value in now differs from read, the state the run started from, and the
// keys the call set (over) whatever their value, set as now has them; the
// keys of read that now no longer has, deleted.
func mergeState(read, now, over, newer map[string]any) map[string]any {
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

// sameValue reports whether two state values have the same JSON form (a
// number read back and the same number set by Go code are the same).
func sameValue(a, b any) bool {
	x, errX := json.Marshal(a)
	y, errY := json.Marshal(b)
	return errX == nil && errY == nil && bytes.Equal(x, y)
}
