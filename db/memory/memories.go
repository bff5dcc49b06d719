package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/db"
)

// UpsertMemory inserts a memory, or updates one the writer may change (stored
// user_id empty or the writer's; otherwise ErrNotFound), keeping created_at.
func (d *Driver) UpsertMemory(ctx context.Context, in *db.Memory) (*db.Memory, error) {
	if in == nil || in.MemoryID == "" {
		return nil, fmt.Errorf("%w: memory_id is required", db.ErrInvalidRecord)
	}
	m := cloneMemory(in)
	m.UserID = writer(ctx, in.UserID)
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if old, ok := d.memories[m.MemoryID]; ok {
		if !writable(old.UserID, m.UserID) {
			return nil, fmt.Errorf("%w: memory %s belongs to another user", db.ErrNotFound, m.MemoryID)
		}
		m.CreatedAt = old.CreatedAt
	}
	d.memories[m.MemoryID] = m
	return cloneMemory(m), nil
}

// GetMemory returns a memory in scope or ErrNotFound.
func (d *Driver) GetMemory(ctx context.Context, memoryID string) (*db.Memory, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	m, ok := d.memories[memoryID]
	if !ok || !visible(ctx, m.UserID) {
		return nil, fmt.Errorf("%w: memory %s", db.ErrNotFound, memoryID)
	}
	return cloneMemory(m), nil
}

// ListMemories returns one page of memories in scope and the total count.
func (d *Driver) ListMemories(ctx context.Context, f db.MemoryFilter) ([]db.Memory, int, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	search := strings.ToLower(f.SearchContent)
	var match []*db.Memory
	for _, m := range d.memories {
		switch {
		case !visible(ctx, m.UserID),
			f.UserID != "" && m.UserID != f.UserID,
			f.AgentID != "" && m.AgentID != f.AgentID,
			f.TeamID != "" && m.TeamID != f.TeamID,
			len(f.Topics) > 0 && !slices.ContainsFunc(f.Topics, func(t string) bool { return slices.Contains(m.Topics, t) }),
			search != "" && !strings.Contains(strings.ToLower(m.Memory), search):
			continue
		}
		match = append(match, m)
	}
	byCreated := f.SortBy == "created_at"
	slices.SortFunc(match, func(a, b *db.Memory) int {
		c := cmp.Compare(a.UpdatedAt, b.UpdatedAt)
		if byCreated {
			c = cmp.Compare(a.CreatedAt, b.CreatedAt)
		}
		return cmpDir(cmp.Or(c, cmp.Compare(a.MemoryID, b.MemoryID)), f.SortOrder)
	})
	out := []db.Memory{}
	for _, m := range page(match, f.Limit, f.Page) {
		out = append(out, *cloneMemory(m))
	}
	return out, len(match), nil
}

// DeleteMemories deletes memories in scope; other ids are ignored.
func (d *Driver) DeleteMemories(ctx context.Context, memoryIDs ...string) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	for _, id := range memoryIDs {
		if m, ok := d.memories[id]; ok && visible(ctx, m.UserID) {
			delete(d.memories, id)
		}
	}
	return nil
}

// MemoryTopics lists the distinct topics of memories in scope, sorted.
func (d *Driver) MemoryTopics(ctx context.Context) ([]string, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	seen := map[string]bool{}
	out := []string{}
	for _, m := range d.memories {
		if !visible(ctx, m.UserID) {
			continue
		}
		for _, t := range m.Topics {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// UserMemoryStats pages per-user memory counts in scope, most recently updated
// first; memories without a user are not counted. The total is the number of users.
func (d *Driver) UserMemoryStats(ctx context.Context, limit, pageNo int) ([]db.UserMemoryStats, int, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	byUser := map[string]*db.UserMemoryStats{}
	for _, m := range d.memories {
		if m.UserID == "" || !visible(ctx, m.UserID) {
			continue
		}
		st := byUser[m.UserID]
		if st == nil {
			st = &db.UserMemoryStats{UserID: m.UserID}
			byUser[m.UserID] = st
		}
		st.TotalMemories++
		st.LastMemoryUpdatedAt = max(st.LastMemoryUpdatedAt, m.UpdatedAt)
	}
	all := make([]db.UserMemoryStats, 0, len(byUser))
	for _, st := range byUser {
		all = append(all, *st)
	}
	slices.SortFunc(all, func(a, b db.UserMemoryStats) int {
		return cmp.Or(cmp.Compare(b.LastMemoryUpdatedAt, a.LastMemoryUpdatedAt), cmp.Compare(a.UserID, b.UserID))
	})
	return slices.Clone(page(all, limit, pageNo)), len(all), nil
}
