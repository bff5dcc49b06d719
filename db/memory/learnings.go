package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/agentryhq/agentry/db"
)

var _ db.LearningDriver = (*Driver)(nil)

func cloneLearning(l *db.Learning) *db.Learning {
	cp := *l
	cp.Content, cp.Metadata = bytes.Clone(l.Content), bytes.Clone(l.Metadata)
	return &cp
}

// readable: a scoped reader sees its rows and the shared ones.
func readable(ctx context.Context, owner string) bool {
	u, ok := db.UserScope(ctx)
	return !ok || owner == "" || owner == u
}

// changeable: a scoped writer changes only its own rows.
func changeable(ctx context.Context, owner string) bool {
	u, ok := db.UserScope(ctx)
	return !ok || (owner != "" && owner == u)
}

// UpsertLearning inserts a learning or updates its content and metadata where
// the caller may change it; otherwise ErrNotFound.
func (d *Driver) UpsertLearning(ctx context.Context, in *db.Learning) (*db.Learning, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if old, ok := d.learnings[in.LearningID]; ok {
		if !changeable(ctx, old.UserID) {
			return nil, fmt.Errorf("%w: learning %s", db.ErrNotFound, in.LearningID)
		}
		old.Content, old.Metadata, old.UpdatedAt = bytes.Clone(in.Content), bytes.Clone(in.Metadata), in.UpdatedAt
		return cloneLearning(old), nil
	}
	l := cloneLearning(in)
	d.learnings[l.LearningID] = l
	return cloneLearning(l), nil
}

// GetLearning returns a learning the caller may read, or ErrNotFound.
func (d *Driver) GetLearning(ctx context.Context, id string) (*db.Learning, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	l, ok := d.learnings[id]
	if !ok || !readable(ctx, l.UserID) {
		return nil, fmt.Errorf("%w: learning %s", db.ErrNotFound, id)
	}
	return cloneLearning(l), nil
}

// ListLearnings returns one page of the learnings the caller may read.
func (d *Driver) ListLearnings(ctx context.Context, f db.LearningFilter) ([]db.Learning, int, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	eq := func(want, got string) bool { return want == "" || want == got }
	var match []*db.Learning
	for _, l := range d.learnings {
		if readable(ctx, l.UserID) && eq(f.LearningType, l.LearningType) && eq(f.UserID, l.UserID) && eq(f.AgentID, l.AgentID) &&
			eq(f.TeamID, l.TeamID) && eq(f.SessionID, l.SessionID) && eq(f.Namespace, l.Namespace) && eq(f.EntityID, l.EntityID) &&
			eq(f.EntityType, l.EntityType) {
			match = append(match, l)
		}
	}
	byCreated := f.SortBy == "created_at"
	slices.SortFunc(match, func(a, b *db.Learning) int {
		c := cmp.Compare(a.UpdatedAt, b.UpdatedAt)
		if byCreated {
			c = cmp.Compare(a.CreatedAt, b.CreatedAt)
		}
		return cmpDir(cmp.Or(c, cmp.Compare(a.LearningID, b.LearningID)), f.SortOrder)
	})
	out := []db.Learning{}
	for _, l := range page(match, f.Limit, f.Page) {
		out = append(out, *cloneLearning(l))
	}
	return out, len(match), nil
}

// DeleteLearning deletes one learning the caller may change.
func (d *Driver) DeleteLearning(ctx context.Context, id string) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	l, ok := d.learnings[id]
	if !ok || !changeable(ctx, l.UserID) {
		return fmt.Errorf("%w: learning %s", db.ErrNotFound, id)
	}
	delete(d.learnings, id)
	return nil
}

// DeleteUserLearnings deletes a user's learnings (of one type when set).
func (d *Driver) DeleteUserLearnings(ctx context.Context, userID, learningType string) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	for id, l := range d.learnings {
		if l.UserID == userID && changeable(ctx, l.UserID) && (learningType == "" || l.LearningType == learningType) {
			delete(d.learnings, id)
		}
	}
	return nil
}

// LearningUsers pages the users owning learnings, most recently updated first.
func (d *Driver) LearningUsers(ctx context.Context, learningType, userID string, limit, pageNo int) ([]db.LearningUser, int, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	last := map[string]int64{}
	for _, l := range d.learnings {
		if l.UserID == "" || !changeable(ctx, l.UserID) || (learningType != "" && l.LearningType != learningType) || (userID != "" && l.UserID != userID) {
			continue
		}
		last[l.UserID] = max(last[l.UserID], cmp.Or(l.UpdatedAt, l.CreatedAt))
	}
	users := make([]db.LearningUser, 0, len(last))
	for u, t := range last {
		users = append(users, db.LearningUser{UserID: u, LastLearningUpdatedAt: t})
	}
	slices.SortFunc(users, func(a, b db.LearningUser) int {
		return cmp.Or(cmp.Compare(b.LastLearningUpdatedAt, a.LastLearningUpdatedAt), cmp.Compare(a.UserID, b.UserID))
	})
	return page(users, limit, pageNo), len(users), nil
}
