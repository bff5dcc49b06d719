package db

import (
	"context"
	"fmt"
	"strings"
)

// MemoryChanges is one batch of writes to one user's memories, applied all or
// nothing (ApplyMemoryChanges). A memory manager builds it from a model's
// answer, so a batch that fails halfway never leaves half of its changes.
type MemoryChanges struct {
	// UserID owns every memory of the batch. Required: memories without a
	// user are never written this way. A scoped context must name the same
	// user.
	UserID string
	// Adds are new memories (MemoryID set; an id that exists is refused).
	Adds []Memory
	// Updates replace the text and topics of existing memories of UserID;
	// an id that is absent or another user's fails the batch (ErrNotFound).
	Updates []Memory
	// Deletes are ids of memories of UserID; an id that is absent or another
	// user's fails the batch (ErrNotFound).
	Deletes []string
}

// Empty reports whether the batch changes nothing.
func (c *MemoryChanges) Empty() bool {
	return len(c.Adds) == 0 && len(c.Updates) == 0 && len(c.Deletes) == 0
}

// MemoryBatcher is the driver ability behind ApplyMemoryChanges. The
// records it is given are checked and stamped by the front.
type MemoryBatcher interface {
	ApplyMemoryChanges(ctx context.Context, ch *MemoryChanges) error
}

// ApplyMemoryChanges validates a batch and applies it in one transaction:
// either every change lands or none does. Every record is written as
// ch.UserID; created_at is kept on updates.
func (d *DB) ApplyMemoryChanges(ctx context.Context, ch *MemoryChanges) error {
	if ch == nil || ch.Empty() {
		return nil
	}
	if ch.UserID == "" {
		return fmt.Errorf("%w: memory changes need a user_id (memories without a user are not stored)", ErrInvalidRecord)
	}
	if u, ok := UserScope(ctx); ok && u != ch.UserID {
		return fmt.Errorf("%w: memory changes for another user", ErrNotFound)
	}
	if err := checkUserID("memory batch", "", ch.UserID); err != nil {
		return err
	}
	b, ok := d.driver.(MemoryBatcher)
	if !ok {
		return fmt.Errorf("db: driver %s cannot apply memory changes in one transaction", d.driver.Dialect())
	}
	cp := MemoryChanges{UserID: ch.UserID, Deletes: ch.Deletes}
	now := d.now().Unix()
	seen := map[string]bool{}
	stamp := func(list []Memory, add bool) ([]Memory, error) {
		out := make([]Memory, len(list))
		for i, m := range list {
			switch {
			case m.MemoryID == "":
				return nil, fmt.Errorf("%w: memory_id is required", ErrInvalidRecord)
			case add && strings.HasSuffix(m.MemoryID, " "):
				return nil, checkNotPadded("memory id", m.MemoryID)
			case m.Memory == "":
				return nil, fmt.Errorf("%w: memory %s has no text", ErrInvalidRecord, m.MemoryID)
			case len(m.Topics) > MaxMemoryTopics:
				return nil, fmt.Errorf("%w: memory %s has %d topics; the limit is %d", ErrInvalidRecord, m.MemoryID, len(m.Topics), MaxMemoryTopics)
			case seen[m.MemoryID]:
				return nil, fmt.Errorf("%w: memory %s is changed twice in one batch", ErrInvalidRecord, m.MemoryID)
			}
			seen[m.MemoryID] = true
			m.UserID = ch.UserID
			if add && m.CreatedAt == 0 {
				m.CreatedAt = now
			}
			m.UpdatedAt = now
			out[i] = m
		}
		return out, nil
	}
	var err error
	if cp.Adds, err = stamp(ch.Adds, true); err != nil {
		return err
	}
	if cp.Updates, err = stamp(ch.Updates, false); err != nil {
		return err
	}
	for _, id := range ch.Deletes {
		if id == "" || seen[id] {
			return fmt.Errorf("%w: delete of memory %q: empty or changed twice in one batch", ErrInvalidRecord, id)
		}
		seen[id] = true
	}
	ctx, call := d.bound(ctx)
	return call.done(b.ApplyMemoryChanges(ctx, &cp))
}
