package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/tool"
)

// DefaultToolCacheTTL is how long a cached tool result is served when
// Config.CacheTTL is zero (Agno's cache_ttl default, one hour).
const DefaultToolCacheTTL = time.Hour

// DefaultToolCacheEntries bounds an agent's tool result cache.
const DefaultToolCacheEntries = 1024

// toolCache serves a successful tool result again for the same tool, the
// same arguments (compared as JSON, key order ignored) and the same user,
// until ttl has passed (Config.CacheResults). Failed calls are not cached.
// It is shared by the agent's runs and safe for concurrent use.
type toolCache struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu      sync.Mutex
	entries map[string]cacheEntry
}

type cacheEntry struct {
	content string
	expires time.Time
}

func newToolCache(ttl time.Duration, max int) *toolCache {
	if ttl <= 0 {
		ttl = DefaultToolCacheTTL
	}
	return &toolCache{ttl: ttl, max: max, now: time.Now, entries: map[string]cacheEntry{}}
}

// cacheKey keys a call by user, tool name and canonical arguments: results
// are never shared between users, whose tools may see different data.
func cacheKey(ctx context.Context, call model.ToolCall) string {
	args := []byte(call.Arguments)
	var v any
	if json.Unmarshal(args, &v) == nil {
		if b, err := json.Marshal(v); err == nil { // maps marshal with sorted keys
			args = b
		}
	}
	rc, _ := FromContext(ctx)
	var b bytes.Buffer
	b.WriteString(rc.UserID)
	b.WriteByte(0)
	b.WriteString(call.Name)
	b.WriteByte(0)
	b.Write(args)
	return b.String()
}

func (c *toolCache) wrap(next ToolHandler) ToolHandler {
	return func(ctx context.Context, call model.ToolCall) tool.Result {
		key := cacheKey(ctx, call)
		now := c.now()
		c.mu.Lock()
		e, ok := c.entries[key]
		c.mu.Unlock()
		if ok && now.Before(e.expires) {
			return tool.Result{Call: call, Content: e.content}
		}
		r := next(ctx, call)
		if r.Err == nil {
			c.put(key, cacheEntry{content: r.Content, expires: c.now().Add(c.ttl)})
		}
		return r
	}
}

func (c *toolCache) put(key string, e cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.entries[key]; !ok && len(c.entries) >= c.max {
		now := c.now()
		for k, old := range c.entries {
			if !now.Before(old.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries { // still full: drop any one entry
			if len(c.entries) < c.max {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = e
}
