package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrForbidden: the caller may see the object but not change it (shared
// knowledge content is writable by admins only; Agno answers 403).
var ErrForbidden = errors.New("db: forbidden")

// Knowledge content statuses, stored lowercase as Agno 3.0 stores them.
const (
	KnowledgeProcessing = "processing"
	KnowledgeCompleted  = "completed"
	KnowledgeFailed     = "failed"
)

// KnowledgeContent is one row of agno_knowledge: a document inserted into a
// knowledge base and its processing status. UserID empty is shared content,
// readable by every user and writable by admins (unscoped callers) only.
type KnowledgeContent struct {
	ID            string
	Name          string
	Description   string
	Metadata      json.RawMessage // a JSON object or nil
	Type          string
	Size          int64
	LinkedTo      string
	AccessCount   int64
	Status        string
	StatusMessage string
	CreatedAt     int64
	UpdatedAt     int64
	ExternalID    string
	UserID        string
}

// KnowledgeFilter pages content rows. Limit must be positive and Page ≥ 1.
type KnowledgeFilter struct {
	Limit, Page int
	// LinkedTo, when set, keeps the rows of that knowledge base only (the
	// linked_to column; knowledge bases sharing a table are told apart so).
	LinkedTo string
	// SortBy is created_at (default), updated_at or name; SortOrder asc or
	// desc (default).
	SortBy, SortOrder string
}

// KnowledgeDriver is the optional ability to store knowledge content rows.
// Under a user scope, reads see the user's rows and shared rows (user_id
// NULL); writes and deletes touch only the user's own rows.
type KnowledgeDriver interface {
	// InsertKnowledgeContent inserts a row; an existing id is left alone and
	// reported as inserted=false.
	InsertKnowledgeContent(ctx context.Context, c *KnowledgeContent) (inserted bool, err error)
	// UpdateKnowledgeContent replaces the mutable fields of a row the caller
	// may write; ErrNotFound otherwise.
	UpdateKnowledgeContent(ctx context.Context, c *KnowledgeContent) error
	GetKnowledgeContent(ctx context.Context, id string) (*KnowledgeContent, error)
	ListKnowledgeContents(ctx context.Context, f KnowledgeFilter) ([]KnowledgeContent, int, error)
	// DeleteKnowledgeContent deletes a row the caller may write; a missing
	// one is not an error.
	DeleteKnowledgeContent(ctx context.Context, id string) error
}

// ErrNoKnowledge: the backend cannot store knowledge content.
var ErrNoKnowledge = errors.New("db: this database driver does not store knowledge content (use sqlite, postgres or mysql)")

func (d *DB) knowledge() (KnowledgeDriver, error) {
	k, ok := d.driver.(KnowledgeDriver)
	if !ok {
		return nil, ErrNoKnowledge
	}
	return k, nil
}

func checkKnowledge(c *KnowledgeContent) error {
	if c == nil {
		return fmt.Errorf("%w: nil knowledge content", ErrInvalidRecord)
	}
	if c.ID == "" || len(c.ID) > 255 || !utf8.ValidString(c.ID) {
		return fmt.Errorf("%w: a knowledge content id is 1 to 255 bytes of UTF-8", ErrInvalidRecord)
	}
	if !utf8.ValidString(c.Name) || !utf8.ValidString(c.Description) || !utf8.ValidString(c.StatusMessage) {
		return fmt.Errorf("%w: knowledge content %s has text that is not UTF-8", ErrInvalidRecord, c.ID)
	}
	if len(c.Metadata) > 0 && !json.Valid(c.Metadata) {
		return fmt.Errorf("%w: knowledge content %s metadata is not JSON", ErrInvalidRecord, c.ID)
	}
	return checkUserID("knowledge content", c.ID, c.UserID)
}

// InsertKnowledgeContent stores a new content row as the caller (a scoped
// caller always inserts its own rows). An existing id is not changed:
// inserted reports whether the row is new.
func (d *DB) InsertKnowledgeContent(ctx context.Context, c *KnowledgeContent) (inserted bool, err error) {
	k, err := d.knowledge()
	if err != nil {
		return false, err
	}
	if err := checkKnowledge(c); err != nil {
		return false, err
	}
	cp := *c
	d.prepareWrite(ctx, &cp.UserID, &cp.CreatedAt, &cp.UpdatedAt)
	if err := checkUserID("knowledge content", cp.ID, cp.UserID); err != nil {
		return false, err
	}
	ctx, call := d.bound(ctx)
	inserted, err = k.InsertKnowledgeContent(ctx, &cp)
	return inserted, call.done(err)
}

// UpdateKnowledgeContent rewrites a row's mutable fields (name,
// description, metadata, type, size, status, status_message, external_id,
// access_count). A scoped caller changing a shared row gets ErrForbidden,
// another user's row ErrNotFound.
func (d *DB) UpdateKnowledgeContent(ctx context.Context, c *KnowledgeContent) error {
	k, err := d.knowledge()
	if err != nil {
		return err
	}
	if err := checkKnowledge(c); err != nil {
		return err
	}
	if err := d.writableKnowledge(ctx, k, c.ID); err != nil {
		return err
	}
	cp := *c
	cp.UpdatedAt = d.now().Unix()
	ctx, call := d.bound(ctx)
	return call.done(k.UpdateKnowledgeContent(ctx, &cp))
}

// writableKnowledge refuses a scoped write to a shared row.
func (d *DB) writableKnowledge(ctx context.Context, k KnowledgeDriver, id string) error {
	if _, scoped := UserScope(ctx); !scoped {
		return nil
	}
	bctx, call := d.bound(ctx)
	cur, err := k.GetKnowledgeContent(bctx, id)
	if err = call.done(err); err != nil {
		return err
	}
	if cur.UserID == "" {
		return fmt.Errorf("%w: knowledge content %s is shared; only an admin can change it", ErrForbidden, id)
	}
	return nil
}

// GetKnowledgeContent returns a row the caller can see or ErrNotFound.
func (d *DB) GetKnowledgeContent(ctx context.Context, id string) (*KnowledgeContent, error) {
	k, err := d.knowledge()
	if err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	c, err := k.GetKnowledgeContent(ctx, id)
	return c, call.done(err)
}

// ListKnowledgeContents pages the rows the caller can see and their total.
func (d *DB) ListKnowledgeContents(ctx context.Context, f KnowledgeFilter) ([]KnowledgeContent, int, error) {
	k, err := d.knowledge()
	if err != nil {
		return nil, 0, err
	}
	if f.Limit <= 0 || f.Page < 1 || PageOffsetOverflows(f.Limit, f.Page) {
		return nil, 0, fmt.Errorf("%w: knowledge listing needs limit > 0 and page >= 1", ErrInvalidFilter)
	}
	switch f.SortBy {
	case "", "created_at", "updated_at", "name":
	default:
		return nil, 0, fmt.Errorf("%w: sort_by %q: use created_at, updated_at or name", ErrInvalidFilter, f.SortBy)
	}
	ctx, call := d.bound(ctx)
	out, n, err := k.ListKnowledgeContents(ctx, f)
	return out, n, call.done(err)
}

// DeleteKnowledgeContent deletes a row: a scoped caller deleting a shared
// row gets ErrForbidden, another user's row ErrNotFound.
func (d *DB) DeleteKnowledgeContent(ctx context.Context, id string) error {
	k, err := d.knowledge()
	if err != nil {
		return err
	}
	if err := d.writableKnowledge(ctx, k, id); err != nil {
		return err
	}
	ctx, call := d.bound(ctx)
	return call.done(k.DeleteKnowledgeContent(ctx, id))
}
