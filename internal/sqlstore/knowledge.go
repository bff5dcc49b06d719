package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/db"
)

const knowledgeCols = "id, name, description, metadata, type, size, linked_to, access_count, status, status_message, created_at, updated_at, external_id, user_id"

var _ db.KnowledgeDriver = (*Store)(nil)

func (s *Store) knowledgeTable() string { return s.d.Table(s.t.Knowledge) }

// InsertKnowledgeContent inserts a row unless its id exists.
func (s *Store) InsertKnowledgeContent(ctx context.Context, c *db.KnowledgeContent) (bool, error) {
	if err := s.gate.enter(ctx); err != nil {
		return false, err
	}
	defer s.gate.leave()
	inserted, err := s.d.Inserted(s.w.ExecContext(ctx, s.d.Bind(s.d.InsertIgnore(s.knowledgeTable(), splitCols(knowledgeCols), "id")),
		c.ID, s.text(c.Name), s.text(c.Description), s.jsonArg(c.Metadata), nullStr(c.Type), c.Size, nullStr(c.LinkedTo), c.AccessCount,
		nullStr(c.Status), s.text(c.StatusMessage), c.CreatedAt, c.UpdatedAt, nullStr(c.ExternalID), nullStr(c.UserID)))
	return inserted, s.fail("insert knowledge content "+c.ID, err)
}

// UpdateKnowledgeContent rewrites a row's mutable fields; under a user scope
// only the user's own rows.
func (s *Store) UpdateKnowledgeContent(ctx context.Context, c *db.KnowledgeContent) error {
	w := &where{}
	w.add("id = ?", c.ID)
	s.scope(ctx, w)
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	args := append([]any{s.text(c.Name), s.text(c.Description), s.jsonArg(c.Metadata), nullStr(c.Type), c.Size, c.AccessCount,
		nullStr(c.Status), s.text(c.StatusMessage), c.UpdatedAt, nullStr(c.ExternalID)}, w.args...)
	res, err := s.w.ExecContext(ctx, s.d.Bind("UPDATE "+s.knowledgeTable()+` SET name = ?, description = ?, metadata = ?, type = ?,
		size = ?, access_count = ?, status = ?, status_message = ?, updated_at = ?, external_id = ?`+w.String()), args...)
	if err != nil {
		return s.fail("update knowledge content "+c.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("%w: knowledge content %s", db.ErrNotFound, c.ID)
	}
	return nil
}

func scanKnowledge(sc scanner) (*db.KnowledgeContent, error) {
	var c db.KnowledgeContent
	var desc, typ, linked, status, msg, ext, user sql.NullString
	var meta []byte
	var size, access, created, updated looseNull
	if err := sc.Scan(&c.ID, &c.Name, &desc, &meta, &typ, &size, &linked, &access, &status, &msg, &created, &updated, &ext, &user); err != nil {
		return nil, undecodable("knowledge", c.ID, err)
	}
	m, err := decodeJSON(meta)
	if err != nil {
		return nil, &db.CorruptRowError{Table: "knowledge", ID: c.ID, Err: err}
	}
	c.Metadata = m
	c.Description, c.Type, c.LinkedTo, c.Status, c.StatusMessage = desc.String, typ.String, linked.String, status.String, msg.String
	c.ExternalID, c.UserID = ext.String, user.String
	c.Size, c.AccessCount, c.CreatedAt, c.UpdatedAt = size.Int64, access.Int64, created.Int64, updated.Int64
	return &c, nil
}

// GetKnowledgeContent returns a row the caller can see or ErrNotFound.
func (s *Store) GetKnowledgeContent(ctx context.Context, id string) (*db.KnowledgeContent, error) {
	w := &where{}
	w.add("id = ?", id)
	s.readScope(ctx, w)
	c, err := scanKnowledge(s.r.QueryRowContext(ctx, s.d.Bind("SELECT "+knowledgeCols+" FROM "+s.knowledgeTable()+w.String()), w.args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: knowledge content %s", db.ErrNotFound, id)
	}
	if err != nil {
		return nil, s.fail("get knowledge content "+id, err)
	}
	return c, nil
}

// ListKnowledgeContents pages the rows the caller can see; an undecodable
// row is left out and reported as in ListSessions.
func (s *Store) ListKnowledgeContents(ctx context.Context, f db.KnowledgeFilter) ([]db.KnowledgeContent, int, error) {
	w := &where{}
	s.readScope(ctx, w)
	if f.LinkedTo != "" {
		w.add("linked_to = ?", f.LinkedTo)
	}
	t := s.knowledgeTable()
	var total int
	if err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(*) FROM "+t+w.String()), w.args...).Scan(&total); err != nil {
		return nil, 0, s.fail("count knowledge contents", err)
	}
	d := "DESC"
	if f.SortOrder != "" {
		d = dir(f.SortOrder)
	}
	q := fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s %s, id %s LIMIT %d OFFSET %d", knowledgeCols, t, w.String(),
		sortCol(f.SortBy, "created_at", "created_at", "updated_at", "name"), d, d, f.Limit, offset(f.Limit, f.Page))
	rows, err := s.r.QueryContext(ctx, s.d.Bind(q), w.args...)
	if err != nil {
		return nil, 0, s.fail("list knowledge contents", err)
	}
	defer rows.Close()
	out, corrupt, err := decodeRows(rows, []db.KnowledgeContent{}, scanKnowledge)
	if err != nil {
		return nil, 0, s.fail("list knowledge contents", err)
	}
	return out, total, corrupt
}

// DeleteKnowledgeContent deletes a row; under a user scope only the user's own.
func (s *Store) DeleteKnowledgeContent(ctx context.Context, id string) error {
	w := &where{}
	w.add("id = ?", id)
	s.scope(ctx, w)
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	_, err := s.w.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.knowledgeTable()+w.String()), w.args...)
	return s.fail("delete knowledge content "+id, err)
}
