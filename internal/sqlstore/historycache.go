package sqlstore

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// maxHistoryEntries bounds historyCache: past it the cache starts again
// empty (a conversation's next turn reads its history once more). An entry
// holds a session row (its agent_data is a few KB) and its history's ids:
// ~5 MB at most. The agent's own history cache keeps 512 sessions.
const maxHistoryEntries = 1024

// historyCache answers a turn's SessionHistoryRefs on SQLite without a
// statement when nothing but this store's own run writes committed since the
// history was last read (docs/adr/sqlite-session-cache.md). A turn of a
// conversation reads its session and history, then writes its run: the
// entry read by turn k, with turn k's write applied to it in Go, is turn
// k+1's answer.
//
// The database's change counter (Config.ChangeCounter: the WAL index
// header's iChange, which every commit of every connection and process
// increments) tells when that holds:
//
//   - An entry is stored from a read only when the counter was the same
//     before and after the read's statements and is still that now (the
//     read saw that version of the database).
//   - seen is the version every entry holds. A counter that moved past seen
//     for any other reason (a commit of another process, another
//     connection or any other write of this store) empties the cache.
//   - A group of run writes (commitGroup) reads the counter after its BEGIN
//     IMMEDIATE, which no commit can pass until it ends, and after its
//     COMMIT. When it was seen before and rose by exactly one (its own
//     commit), each write's effect is applied to the entries of its session
//     and seen moves on; a write in the group whose effect is not known
//     (not a plain SaveRun) empties the cache instead.
//
// The effect of a run write on an entry replays the history statement's
// conditions (historyWhere) in Go on the row as stored (the upsert returns
// the columns it keeps); anything it cannot decide (an update of a run in
// the history, a tie or a NULL run_index) drops the entry. Hits are
// served only to callers that read the session without changing it
// (HistoryQuery.ReadOnlySession) and already hold every run of the answer
// (HistoryQuery.Cached): the answer then carries no run_data.
type historyCache struct {
	count func() (uint64, bool)

	mu        sync.Mutex
	seen      uint64 // the version of the database the entries hold
	valid     bool   // seen was read; without it there are no entries
	n         int
	bySession map[string][]*historyEntry

	hits, stored atomic.Uint64 // for tests and diagnostics
}

// historyKey is what a history answer depends on besides the session: the
// query's component conditions, the caller's user scope and the limit.
type historyKey struct {
	agent, team, user string
	scoped, members   bool
	limit             int
}

// historyEntry is one history answer at the cache's version: the session row
// as stored and the history runs, oldest first.
type historyEntry struct {
	key  historyKey
	sess *db.Session
	refs []cachedRef
}

// cachedRef is a history run of an entry: what a caller's CachedRun is
// matched against, and its run_index for the order.
type cachedRef struct {
	id             string
	idx, upd, size int64
}

// runEffect is a committed run write, as the upsert stored it: sess is the
// session row it wrote (nil when none), run the run row with the columns an
// update keeps taken from the stored row (scanUpsertedRun).
type runEffect struct {
	sess *db.Session
	run  *db.Run
}

// groupEffects collects the effects of a group's writes (see commitGroup).
type groupEffects struct {
	list []runEffect
	// unknown: a write whose effect on histories is not known committed.
	unknown bool
}

func newHistoryCache(count func() (uint64, bool)) *historyCache {
	return &historyCache{count: count, bySession: make(map[string][]*historyEntry)}
}

// keyOf is hq's key for a caller with the given user scope.
func keyOf(hq db.HistoryQuery, user string, scoped bool) historyKey {
	k := historyKey{agent: hq.AgentID, team: hq.TeamID, scoped: scoped, members: hq.MemberRuns, limit: hq.Limit}
	if scoped {
		k.user = user
	}
	return k
}

// lookup answers hq from the cache: the session and the refs (oldest first,
// without run_data), when the database is still at the cached version and
// the caller holds every run of the answer as stored.
func (c *historyCache) lookup(hq db.HistoryQuery, user string, scoped bool) (*db.Session, []db.HistoryRef, bool) {
	if !hq.ReadOnlySession || hq.Limit <= 0 {
		return nil, nil, false
	}
	k := keyOf(hq, user, scoped)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.valid {
		return nil, nil, false
	}
	if v, ok := c.count(); !ok || v != c.seen {
		return nil, nil, false
	}
	e := c.find(hq.SessionID, k)
	if e == nil {
		return nil, nil, false
	}
	// hq.Cached lists runs newest first, the entry oldest first: the search
	// starts where the last match left it.
	next := 0
	for i := len(e.refs) - 1; i >= 0; i-- {
		r := &e.refs[i]
		ok := false
		for j := range len(hq.Cached) {
			x := &hq.Cached[(next+j)%len(hq.Cached)]
			if x.RunID == r.id {
				ok = x.UpdatedAt == r.upd && int64(x.Size) == r.size
				next = (next+j)%len(hq.Cached) + 1
				break
			}
		}
		if !ok {
			return nil, nil, false
		}
	}
	refs := make([]db.HistoryRef, len(e.refs))
	for i, r := range e.refs {
		refs[i] = db.HistoryRef{RunID: r.id, UpdatedAt: r.upd}
	}
	c.hits.Add(1)
	return e.sess, refs, true
}

// find is the entry of session sid for k, or nil; c.mu is held.
func (c *historyCache) find(sid string, k historyKey) *historyEntry {
	for _, e := range c.bySession[sid] {
		if e.key == k {
			return e
		}
	}
	return nil
}

// store keeps a read's answer, read at version v (the counter before and
// after its statements), unless the database moved on since.
func (c *historyCache) store(v uint64, hq db.HistoryQuery, user string, scoped bool, sess *db.Session, refs []cachedRef) {
	if !hq.ReadOnlySession || hq.Limit <= 0 {
		return // the caller may change sess: it cannot be shared
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if now, ok := c.count(); !ok || now != v {
		return
	}
	if !c.valid || c.seen != v || c.n >= maxHistoryEntries {
		c.reset()
		c.seen, c.valid = v, true
	}
	k := keyOf(hq, user, scoped)
	if e := c.find(hq.SessionID, k); e != nil {
		e.sess, e.refs = sess, refs
	} else {
		c.bySession[hq.SessionID] = append(c.bySession[hq.SessionID], &historyEntry{key: k, sess: sess, refs: refs})
		c.n++
	}
	c.stored.Add(1)
}

// knows reports whether an entry of session sid is cached: its row existed
// at the cache's version (a nil cache knows nothing).
func (c *historyCache) knows(sid string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.bySession[sid]) > 0
}

// reset drops every entry; c.mu is held.
func (c *historyCache) reset() {
	if c.n > 0 {
		clear(c.bySession)
		c.n = 0
	}
}

// committed applies the writes of a transaction that ended with commitErr:
// before is the counter read under its write lock (ok false: not read), fx
// its writes' effects (nil: not known). A nil cache does nothing.
func (c *historyCache) committed(before uint64, ok bool, fx *groupEffects, commitErr error) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	after, okAfter := c.count()
	if !ok || !okAfter || commitErr != nil || fx == nil || fx.unknown || !c.valid || c.seen != before || !oneCommit(before, after) {
		c.reset()
		c.seen, c.valid = after, okAfter
		return
	}
	for i := range fx.list {
		c.apply(&fx.list[i])
	}
	c.seen = after
}

// apply updates the entries of a run write's session; c.mu is held.
func (c *historyCache) apply(w *runEffect) {
	r := w.run
	entries := c.bySession[r.SessionID]
	if len(entries) == 0 {
		return
	}
	var sess *db.Session // w.sess as the cache's own copy, made once
	kept := entries[:0]
	for _, e := range entries {
		if w.sess != nil {
			if e.key.scoped && (w.sess.UserID == "" || w.sess.UserID != e.key.user) {
				continue // the session arm no longer finds the row
			}
			if sess == nil {
				sess = w.sess.Clone()
			}
			e.sess = sess
		}
		if !e.addRun(r) {
			continue
		}
		kept = append(kept, e)
	}
	c.n -= len(entries) - len(kept)
	clear(entries[len(kept):])
	if len(kept) == 0 {
		delete(c.bySession, r.SessionID)
	} else {
		c.bySession[r.SessionID] = kept
	}
}

// addRun applies a stored run to the entry's history; false when the entry
// can no longer be told (the run was in it: an update; or a NULL or tied
// run_index).
func (e *historyEntry) addRun(r *db.Run) bool {
	if r.RunIndex == nil {
		return false
	}
	for i := range e.refs {
		if e.refs[i].id == r.RunID {
			return false
		}
	}
	if !e.key.inHistory(r) {
		return true // not a history run, and was not one in the answer
	}
	idx := *r.RunIndex
	// The first position whose run_index is above idx; oldest first.
	pos := len(e.refs)
	for pos > 0 && e.refs[pos-1].idx >= idx {
		if e.refs[pos-1].idx == idx {
			return false
		}
		pos--
	}
	if len(e.refs) >= e.key.limit && pos == 0 {
		return true // older than a full answer's runs
	}
	// An entry owns its refs (a hit copies them out), so they change in place.
	e.refs = slices.Insert(e.refs, pos, cachedRef{id: r.RunID, idx: idx, upd: r.UpdatedAt, size: int64(len(r.RunData))})
	if len(e.refs) > e.key.limit {
		e.refs = e.refs[len(e.refs)-e.key.limit:]
	}
	return true
}

// inHistory replays historyWhere's conditions (besides the session's) on a
// stored run: empty strings are stored as NULL, which equals nothing.
func (k historyKey) inHistory(r *db.Run) bool {
	switch {
	case r.ParentRunID != "" && !k.members:
		return false
	case r.Status != "" && slices.Contains(run.HistorySkipStatuses, r.Status):
		return false
	case k.agent != "" && r.AgentID != k.agent:
		return false
	case k.team != "" && r.TeamID != k.team:
		return false
	case k.scoped && (r.UserID == "" || r.UserID != k.user):
		return false
	}
	return true
}

// oneCommit reports whether the counter went from before to after by one
// commit: the low 32 bits count commits (ChangeCounter).
func oneCommit(before, after uint64) bool {
	return uint32(after) == uint32(before)+1
}

// mark is where the next write's effects start (0 without effects).
func (fx *groupEffects) mark() int {
	if fx == nil {
		return 0
	}
	return len(fx.list)
}

// rollback drops the effects of a write rolled back to its savepoint.
func (fx *groupEffects) rollback(mark int) {
	if fx != nil {
		clear(fx.list[mark:])
		fx.list = fx.list[:mark]
	}
}

// ran records that a write succeeded: one that recorded no effect is
// unknown to the cache.
func (fx *groupEffects) ran(mark int) {
	if fx != nil && len(fx.list) == mark {
		fx.unknown = true
	}
}

// add records a write's effect.
func (fx *groupEffects) add(e runEffect) {
	if fx != nil {
		fx.list = append(fx.list, e)
	}
}

// HistoryCacheStats reports how many history reads the store answered from
// its history cache and how many answers it stored there (both 0 without
// one): a diagnostic, and what tests check the cache's use by.
func (s *Store) HistoryCacheStats() (hits, stored uint64) {
	if s.hc == nil {
		return 0, 0
	}
	return s.hc.hits.Load(), s.hc.stored.Load()
}
