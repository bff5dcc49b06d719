package agent

import (
	"sync"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
)

// historyCacheSize bounds the runs whose context messages an Agent keeps.
const historyCacheSize = 512

// historyCache keeps the context messages of runs this agent recently stored,
// so the next run of a conversation does not decode them back from run_data.
// An entry is used only while the stored row is unchanged (same updated_at and
// run_data length); anything else is decoded from the row as usual.
type historyCache struct {
	mu      sync.Mutex
	entries map[string]historyEntry
}

type historyEntry struct {
	updatedAt int64
	size      int
	msgs      []model.Message // shared, read-only
}

func (c *historyCache) get(r *db.Run) ([]model.Message, bool) {
	c.mu.Lock()
	e, ok := c.entries[r.RunID]
	c.mu.Unlock()
	if !ok || e.updatedAt != r.UpdatedAt || e.size != len(r.RunData) {
		return nil, false
	}
	return e.msgs, true
}

func (c *historyCache) put(r *db.Run, msgs []model.Message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = make(map[string]historyEntry, 64)
	}
	if len(c.entries) >= historyCacheSize {
		for k := range c.entries { // evict an arbitrary entry
			delete(c.entries, k)
			break
		}
	}
	c.entries[r.RunID] = historyEntry{updatedAt: r.UpdatedAt, size: len(r.RunData), msgs: msgs}
}

// contextMessages are the messages of a run that later runs see as history.
func contextMessages(all []model.Message) []model.Message {
	out := make([]model.Message, 0, len(all))
	for _, m := range all {
		if m.Role == model.RoleSystem || m.FromHistory {
			continue
		}
		m.FromHistory = true
		out = append(out, m)
	}
	return out
}
