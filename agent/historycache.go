package agent

import (
	"slices"
	"sync"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
)

// historyCacheSize bounds the runs whose context messages an Agent keeps.
const historyCacheSize = 512

// historyCache keeps the context messages of runs this agent recently stored,
// so the next run of a conversation does not decode them back from run_data.
// An entry is used only while the stored row is unchanged (same updated_at and
// run_data length); anything else is decoded from the row as usual. The
// history query names the session's cached runs (known), so the database
// leaves their run_data out.
//
// When full, the oldest entry (and the oldest session's list) goes first: a
// conversation in progress stores its runs last, so the runs its next turn
// reads stay cached however many other sessions the agent serves (an
// arbitrary victim was often one of them, decoded again from run_data).
type historyCache struct {
	mu        sync.Mutex
	entries   map[string]historyEntry
	bySession map[string][]string // run ids in put order, newest last
	// runs and sessions are the keys of entries and bySession in the order
	// they were added, as rings: when full, the slot at runsAt (sessionsAt)
	// is the oldest key, evicted and reused for the new one.
	runs, sessions     []string
	runsAt, sessionsAt int
}

type historyEntry struct {
	updatedAt int64
	size      int
	msgs      []model.Message // shared, read-only
	media     bool            // some message holds a media reference to read back (needsMedia)
}

// sessionRunsKept bounds the run ids remembered per session.
const sessionRunsKept = 64

func (c *historyCache) get(r *db.HistoryRef) ([]model.Message, bool) {
	c.mu.Lock()
	e, ok := c.entries[r.RunID]
	c.mu.Unlock()
	if !ok || e.updatedAt != r.UpdatedAt || (r.RunData != nil && e.size != len(r.RunData)) {
		return nil, false
	}
	return e.msgs, true
}

// getAll is get for each row, under one lock: into[i] is the cached
// messages of rows[i], or nil. into may be the array the caller builds its
// result in, as long as it reads into[i] before writing there. media reports
// whether any of the cached runs holds a media reference to read back.
func (c *historyCache) getAll(rows []db.HistoryRef, into [][]model.Message) (_ [][]model.Message, media bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range rows {
		r := &rows[i]
		e, ok := c.entries[r.RunID]
		if !ok || e.updatedAt != r.UpdatedAt || (r.RunData != nil && e.size != len(r.RunData)) {
			into[i] = nil
			continue
		}
		into[i] = e.msgs
		media = media || e.media
	}
	return into, media
}

// known returns the newest (up to n) cached runs of a session for
// db.HistoryQuery.Cached.
func (c *historyCache) known(sessionID string, n int) []db.CachedRun {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := c.bySession[sessionID]
	out := make([]db.CachedRun, 0, min(n, len(ids)))
	for i := len(ids) - 1; i >= 0 && len(out) < n; i-- {
		if e, ok := c.entries[ids[i]]; ok {
			out = append(out, db.CachedRun{RunID: ids[i], UpdatedAt: e.updatedAt, Size: e.size})
		}
	}
	return out
}

func (c *historyCache) put(sessionID string, r *db.HistoryRef, msgs []model.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = make(map[string]historyEntry, 64)
		c.bySession = make(map[string][]string, 16)
	}
	_, had := c.entries[r.RunID]
	if !had {
		c.runs, c.runsAt = addKey(c.runs, c.runsAt, r.RunID, func(old string) { delete(c.entries, old) })
	}
	c.entries[r.RunID] = historyEntry{updatedAt: r.UpdatedAt, size: len(r.RunData), msgs: msgs, media: slices.ContainsFunc(msgs, needsMedia)}
	ids, listed := c.bySession[sessionID]
	if had && slices.Contains(ids, r.RunID) {
		return
	}
	if !listed {
		c.sessions, c.sessionsAt = addKey(c.sessions, c.sessionsAt, sessionID, func(old string) { delete(c.bySession, old) })
	}
	if len(ids) >= sessionRunsKept {
		ids = slices.Delete(ids, 0, len(ids)-sessionRunsKept+1)
	}
	c.bySession[sessionID] = append(ids, r.RunID)
}

// addKey adds key to a ring of at most historyCacheSize keys (next: the
// oldest key's slot once full), calling evict with the key it replaces.
func addKey(ring []string, next int, key string, evict func(string)) ([]string, int) {
	if len(ring) < historyCacheSize {
		return append(ring, key), 0
	}
	evict(ring[next])
	ring[next] = key
	return ring, (next + 1) % historyCacheSize
}

// contextMessages are the messages of a run that later runs see as history.
func contextMessages(all []model.Message) []model.Message {
	n := 0
	for i := range all {
		if all[i].Role != model.RoleSystem && !all[i].FromHistory {
			n++
		}
	}
	out := make([]model.Message, 0, n)
	for _, m := range all {
		if m.Role == model.RoleSystem || m.FromHistory {
			continue
		}
		m.FromHistory = true
		out = append(out, m)
	}
	return out
}
