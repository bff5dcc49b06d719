package memory

import (
	"context"
	"fmt"

	"github.com/agentryhq/agentry/db"
)

var _ db.MemoryBatcher = (*Driver)(nil)

// ApplyMemoryChanges checks the whole batch under the write lock, then
// applies it: like the SQL drivers' transaction, all or nothing.
func (d *Driver) ApplyMemoryChanges(ctx context.Context, ch *db.MemoryChanges) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	for _, m := range ch.Adds {
		if _, ok := d.memories[m.MemoryID]; ok {
			return fmt.Errorf("%w: memory %s exists already", db.ErrInvalidRecord, m.MemoryID)
		}
	}
	owned := func(id string) error {
		if old, ok := d.memories[id]; !ok || old.UserID != ch.UserID {
			return fmt.Errorf("%w: memory %s of user %s", db.ErrNotFound, id, ch.UserID)
		}
		return nil
	}
	for _, m := range ch.Updates {
		if err := owned(m.MemoryID); err != nil {
			return err
		}
	}
	for _, id := range ch.Deletes {
		if err := owned(id); err != nil {
			return err
		}
	}
	for i := range ch.Adds {
		m := cloneMemory(&ch.Adds[i])
		m.UserID = ch.UserID
		d.memories[m.MemoryID] = m
	}
	for _, u := range ch.Updates {
		m := d.memories[u.MemoryID]
		m.Memory, m.Topics, m.UpdatedAt = u.Memory, cloneMemory(&u).Topics, u.UpdatedAt
	}
	for _, id := range ch.Deletes {
		delete(d.memories, id)
	}
	return nil
}
