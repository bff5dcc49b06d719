package db

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
)

// Learning is one row of agno_learnings (Agno 3.0's learning stores: entity
// memory, user profiles, user memory, session context, decision logs). A
// NULL user_id is a shared row (an agent's, a team's, a session's or a
// global entity): every user may read it, only an unscoped caller (an
// admin) may change it.
type Learning struct {
	LearningID   string
	LearningType string
	Namespace    string
	UserID       string
	AgentID      string
	TeamID       string
	WorkflowID   string
	SessionID    string
	EntityID     string
	EntityType   string
	// Content is a JSON object (required); Metadata a JSON object or empty.
	Content   json.RawMessage
	Metadata  json.RawMessage
	CreatedAt int64
	UpdatedAt int64
}

// LearningFilter selects learnings. Limit is required; Page starts at 1.
// Empty fields do not filter.
type LearningFilter struct {
	LearningType, UserID, AgentID, TeamID, SessionID, Namespace, EntityID, EntityType string
	Limit, Page                                                                       int
	// SortBy is "updated_at" (default) or "created_at".
	SortBy, SortOrder string
}

// LearningSortColumns are the columns ListLearnings may sort by.
var LearningSortColumns = []string{"updated_at", "created_at"}

// LearningUser is a user owning learnings, with their latest update.
type LearningUser struct {
	UserID                string
	LastLearningUpdatedAt int64
}

// LearningDriver is the optional driver ability behind the learning calls.
// Reads in a user scope see the user's rows and the shared (NULL user_id)
// ones; writes in a scope touch only the user's rows.
type LearningDriver interface {
	UpsertLearning(ctx context.Context, l *Learning) (*Learning, error)
	GetLearning(ctx context.Context, id string) (*Learning, error)
	ListLearnings(ctx context.Context, f LearningFilter) ([]Learning, int, error)
	// DeleteLearning deletes one row the caller may change; ErrNotFound
	// otherwise.
	DeleteLearning(ctx context.Context, id string) error
	// DeleteUserLearnings deletes a user's rows (of one type when set);
	// shared rows are never deleted this way.
	DeleteUserLearnings(ctx context.Context, userID, learningType string) error
	// LearningUsers pages the users owning learnings, most recently updated
	// first (of one type and one user when set).
	LearningUsers(ctx context.Context, learningType, userID string, limit, page int) ([]LearningUser, int, error)
}

// ErrUnsupported: the driver lacks an optional ability.
var ErrUnsupported = errors.New("db: not supported by this database driver")

// EntityLearningType is the learning type of entity memory.
const EntityLearningType = "entity_memory"

// EntityLearningID is the key Agno 3.0 gives an entity memory: under the
// "user" namespace, entity_user_{sha256(user_id)[:16]}_{type}_{id}, so two
// users' entities of the same name are distinct rows (the digest cannot
// contain the separator, and keeps raw user ids out of URLs); under another
// namespace (default "global"), entity_{namespace}_{type}_{id}. It is empty
// when a field the key needs is missing.
func EntityLearningID(namespace, userID, entityType, entityID string) string {
	if entityID == "" || entityType == "" {
		return ""
	}
	if namespace == "" {
		namespace = "global"
	}
	if namespace == "user" {
		if userID == "" {
			return ""
		}
		sum := sha256.Sum256([]byte(userID))
		return "entity_user_" + hex.EncodeToString(sum[:])[:16] + "_" + entityType + "_" + entityID
	}
	return "entity_" + namespace + "_" + entityType + "_" + entityID
}

func (d *DB) learnings() (LearningDriver, error) {
	l, ok := d.driver.(LearningDriver)
	if !ok {
		return nil, fmt.Errorf("%w: learnings (driver %s)", ErrUnsupported, d.driver.Dialect())
	}
	return l, nil
}

// jsonObject reports whether raw is a JSON object.
func jsonObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// UpsertLearning validates and stores a learning. A scoped caller writes as
// itself and cannot change another user's or a shared row (ErrNotFound).
func (d *DB) UpsertLearning(ctx context.Context, l *Learning) (*Learning, error) {
	ld, err := d.learnings()
	if err != nil {
		return nil, err
	}
	switch {
	case l == nil || l.LearningID == "":
		return nil, fmt.Errorf("%w: learning_id is required", ErrInvalidRecord)
	case l.LearningType == "":
		return nil, fmt.Errorf("%w: learning_type is required", ErrInvalidRecord)
	case !jsonObject(l.Content):
		return nil, fmt.Errorf("%w: content of learning %s must be a JSON object", ErrInvalidRecord, l.LearningID)
	case len(l.Metadata) > 0 && !jsonObject(l.Metadata) && string(bytes.TrimSpace(l.Metadata)) != "null":
		return nil, fmt.Errorf("%w: metadata of learning %s must be a JSON object", ErrInvalidRecord, l.LearningID)
	}
	cp := *l
	if string(bytes.TrimSpace(cp.Metadata)) == "null" {
		cp.Metadata = nil
	}
	d.prepareWrite(ctx, &cp.UserID, &cp.CreatedAt, &cp.UpdatedAt)
	if err := checkUserID("learning", cp.LearningID, cp.UserID); err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := ld.UpsertLearning(ctx, &cp)
	return out, call.done(err)
}

// GetLearning returns a learning the caller may read, or ErrNotFound.
func (d *DB) GetLearning(ctx context.Context, id string) (*Learning, error) {
	ld, err := d.learnings()
	if err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := ld.GetLearning(ctx, id)
	return out, call.done(err)
}

// ListLearnings validates the filter and returns a page and the total.
func (d *DB) ListLearnings(ctx context.Context, f LearningFilter) ([]Learning, int, error) {
	ld, err := d.learnings()
	if err != nil {
		return nil, 0, err
	}
	if err := checkPage(f.Limit, f.Page, &f.SortBy, &f.SortOrder, LearningSortColumns, Desc); err != nil {
		return nil, 0, err
	}
	ctx, call := d.bound(ctx)
	out, n, err := ld.ListLearnings(ctx, f)
	return out, n, call.done(err)
}

// DeleteLearning deletes one learning the caller may change.
func (d *DB) DeleteLearning(ctx context.Context, id string) error {
	ld, err := d.learnings()
	if err != nil {
		return err
	}
	ctx, call := d.bound(ctx)
	return call.done(ld.DeleteLearning(ctx, id))
}

// DeleteUserLearnings deletes a user's learnings (of one type when set). A
// scoped caller may only name itself (ErrNotFound otherwise).
func (d *DB) DeleteUserLearnings(ctx context.Context, userID, learningType string) error {
	ld, err := d.learnings()
	if err != nil {
		return err
	}
	if userID == "" {
		return fmt.Errorf("%w: user_id is required", ErrInvalidFilter)
	}
	if u, ok := UserScope(ctx); ok && u != userID {
		return fmt.Errorf("%w: learnings of user %s", ErrNotFound, userID)
	}
	ctx, call := d.bound(ctx)
	return call.done(ld.DeleteUserLearnings(ctx, userID, learningType))
}

// LearningUsers pages the users owning learnings; a scoped caller sees only
// itself.
func (d *DB) LearningUsers(ctx context.Context, learningType, userID string, limit, page int) ([]LearningUser, int, error) {
	ld, err := d.learnings()
	if err != nil {
		return nil, 0, err
	}
	if limit <= 0 || page < 1 || PageOffsetOverflows(limit, page) {
		return nil, 0, fmt.Errorf("%w: limit must be positive and page >= 1 (and the page's offset an int64)", ErrInvalidFilter)
	}
	scopeUser(ctx, &userID)
	ctx, call := d.bound(ctx)
	out, n, err := ld.LearningUsers(ctx, learningType, userID, limit, page)
	return out, n, call.done(err)
}
