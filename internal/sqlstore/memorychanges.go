package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentryhq/agentry/db"
)

var _ db.MemoryBatcher = (*Store)(nil)

// ApplyMemoryChanges applies one user's batch in one transaction on the
// writer. An add whose id exists, or an update or delete that finds no row of
// ch.UserID, rolls the whole batch back.
func (s *Store) ApplyMemoryChanges(ctx context.Context, ch *db.MemoryChanges) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	var refused error
	err := s.inTx(ctx, func(c txConn) error {
		ins := s.d.Bind(s.d.InsertIgnore(s.memories, splitCols(memoryCols), "memory_id"))
		for _, m := range ch.Adds {
			text, _ := json.Marshal(m.Memory)
			inserted, err := s.d.Inserted(c.tx.ExecContext(ctx, ins, m.MemoryID, s.jsonText(text), s.nullText(m.Feedback), s.nullText(m.Input),
				nullStr(m.AgentID), nullStr(m.TeamID), ch.UserID, s.topicsJSON(m.Topics), m.CreatedAt, m.UpdatedAt))
			if err != nil {
				return err
			}
			if !inserted {
				refused = fmt.Errorf("%w: memory %s exists already", db.ErrInvalidRecord, m.MemoryID)
				return refused
			}
		}
		upd := s.d.Bind("UPDATE " + s.memories + " SET memory = ?, topics = ?, updated_at = ? WHERE memory_id = ? AND " + s.d.EqExact("user_id"))
		for _, m := range ch.Updates {
			text, _ := json.Marshal(m.Memory)
			res, err := c.tx.ExecContext(ctx, upd, s.jsonText(text), s.topicsJSON(m.Topics), m.UpdatedAt, m.MemoryID, ch.UserID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				refused = fmt.Errorf("%w: memory %s of user %s", db.ErrNotFound, m.MemoryID, ch.UserID)
				return refused
			}
		}
		del := s.d.Bind("DELETE FROM " + s.memories + " WHERE memory_id = ? AND " + s.d.EqExact("user_id"))
		for _, id := range ch.Deletes {
			res, err := c.tx.ExecContext(ctx, del, id, ch.UserID)
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n == 0 {
				refused = fmt.Errorf("%w: memory %s of user %s", db.ErrNotFound, id, ch.UserID)
				return refused
			}
		}
		return nil
	})
	if refused != nil {
		return refused
	}
	if err != nil {
		return s.fail("apply memory changes", err)
	}
	return nil
}

// topicsJSON is the topics column's value: NULL for no list.
func (s *Store) topicsJSON(topics []string) any {
	if topics == nil {
		return nil
	}
	b, _ := json.Marshal(topics)
	return s.jsonText(b)
}
