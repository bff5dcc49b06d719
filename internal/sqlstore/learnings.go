package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/db"
)

var _ db.LearningDriver = (*Store)(nil)

const learningCols = "learning_id, learning_type, namespace, user_id, agent_id, team_id, workflow_id, session_id, entity_id, entity_type, content, metadata, created_at, updated_at"

// readScope limits a learnings read to the scoped user's rows and the
// shared ones.
func (s *Store) readScope(ctx context.Context, w *where) {
	if u, ok := db.UserScope(ctx); ok {
		w.add("("+s.d.EqExact("user_id")+" OR user_id IS NULL)", u)
	}
}

// UpsertLearning inserts a learning, or updates it where the caller may: an
// unscoped caller any row, a scoped one only its own; otherwise ErrNotFound.
// Identity columns keep their stored values on update (Agno's PATCH rule).
func (s *Store) UpsertLearning(ctx context.Context, l *db.Learning) (*db.Learning, error) {
	args := []any{l.LearningID, l.LearningType, nullStr(l.Namespace), nullStr(l.UserID), nullStr(l.AgentID), nullStr(l.TeamID),
		nullStr(l.WorkflowID), nullStr(l.SessionID), nullStr(l.EntityID), nullStr(l.EntityType), s.jsonArg(l.Content), s.jsonArg(l.Metadata),
		l.CreatedAt, l.UpdatedAt}
	inserted, err := s.d.Inserted(s.w.ExecContext(ctx, s.d.Bind(s.d.InsertIgnore(s.learning, splitCols(learningCols), "learning_id")), args...))
	if err != nil {
		return nil, s.fail("upsert learning "+l.LearningID, err)
	}
	if !inserted {
		w := &where{}
		w.add("learning_id = ?", l.LearningID)
		s.scope(ctx, w)
		res, err := s.w.ExecContext(ctx, s.d.Bind("UPDATE "+s.learning+" SET content = ?, metadata = ?, updated_at = ?"+w.String()),
			append([]any{s.jsonArg(l.Content), s.jsonArg(l.Metadata), l.UpdatedAt}, w.args...)...)
		if err != nil {
			return nil, s.fail("upsert learning "+l.LearningID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, fmt.Errorf("%w: learning %s", db.ErrNotFound, l.LearningID)
		}
	}
	return s.getLearning(ctx, s.w, l.LearningID, nil)
}

// GetLearning returns a learning the caller may read, or ErrNotFound.
func (s *Store) GetLearning(ctx context.Context, id string) (*db.Learning, error) {
	return s.getLearning(ctx, s.r, id, s.readScope)
}

func (s *Store) getLearning(ctx context.Context, q *sql.DB, id string, sc func(context.Context, *where)) (*db.Learning, error) {
	w := &where{}
	w.add("learning_id = ?", id)
	if sc != nil {
		sc(ctx, w)
	}
	l, err := scanLearning(q.QueryRowContext(ctx, s.d.Bind("SELECT "+learningCols+" FROM "+s.learning+w.String()), w.args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: learning %s", db.ErrNotFound, id)
	}
	if err != nil {
		return nil, s.fail("get learning "+id, err)
	}
	return l, nil
}

// ListLearnings returns one page of the learnings the caller may read.
func (s *Store) ListLearnings(ctx context.Context, f db.LearningFilter) ([]db.Learning, int, error) {
	w := &where{}
	w.eq("learning_type", f.LearningType)
	s.userEq(w, "user_id", f.UserID)
	w.eq("agent_id", f.AgentID)
	w.eq("team_id", f.TeamID)
	w.eq("session_id", f.SessionID)
	w.eq("namespace", f.Namespace)
	w.eq("entity_id", f.EntityID)
	w.eq("entity_type", f.EntityType)
	s.readScope(ctx, w)
	var total int
	if err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(*) FROM "+s.learning+w.String()), w.args...).Scan(&total); err != nil {
		return nil, 0, s.fail("count learnings", err)
	}
	d := dir(f.SortOrder)
	q := fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s %s, learning_id %s LIMIT %d OFFSET %d", learningCols, s.learning, w.String(),
		sortCol(f.SortBy, "updated_at", "updated_at", "created_at"), d, d, f.Limit, offset(f.Limit, f.Page))
	rows, err := s.r.QueryContext(ctx, s.d.Bind(q), w.args...)
	if err != nil {
		return nil, 0, s.fail("list learnings", err)
	}
	defer rows.Close()
	out, corrupt, err := decodeRows(rows, []db.Learning{}, scanLearning)
	if err != nil {
		return nil, 0, s.fail("list learnings", err)
	}
	return out, total, corrupt
}

// DeleteLearning deletes one learning the caller may change.
func (s *Store) DeleteLearning(ctx context.Context, id string) error {
	w := &where{}
	w.add("learning_id = ?", id)
	s.scope(ctx, w)
	res, err := s.w.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.learning+w.String()), w.args...)
	if err != nil {
		return s.fail("delete learning "+id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: learning %s", db.ErrNotFound, id)
	}
	return nil
}

// DeleteUserLearnings deletes a user's learnings (of one type when set).
func (s *Store) DeleteUserLearnings(ctx context.Context, userID, learningType string) error {
	w := &where{}
	w.add(s.d.EqExact("user_id"), userID)
	w.eq("learning_type", learningType)
	s.scope(ctx, w)
	if _, err := s.w.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.learning+w.String()), w.args...); err != nil {
		return s.fail("delete learnings of user "+userID, err)
	}
	return nil
}

// LearningUsers pages the users owning learnings, most recently updated first.
func (s *Store) LearningUsers(ctx context.Context, learningType, userID string, limit, page int) ([]db.LearningUser, int, error) {
	w := &where{}
	w.add("user_id IS NOT NULL")
	w.eq("learning_type", learningType)
	s.userEq(w, "user_id", userID)
	s.scope(ctx, w)
	var total int
	if err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(DISTINCT user_id) FROM "+s.learning+w.String()), w.args...).Scan(&total); err != nil {
		return nil, 0, s.fail("learning users", err)
	}
	q := fmt.Sprintf("SELECT user_id, COALESCE(MAX(COALESCE(updated_at, created_at)), 0) FROM %s%s GROUP BY user_id ORDER BY 2 DESC, user_id LIMIT %d OFFSET %d",
		s.learning, w.String(), limit, offset(limit, page))
	rows, err := s.r.QueryContext(ctx, s.d.Bind(q), w.args...)
	if err != nil {
		return nil, 0, s.fail("learning users", err)
	}
	defer rows.Close()
	out := []db.LearningUser{}
	for rows.Next() {
		var u db.LearningUser
		// MAX over another writer's REAL updated_at is a REAL on SQLite.
		var at looseNull
		if err := rows.Scan(&u.UserID, &at); err != nil {
			return nil, 0, s.fail("learning users", err)
		}
		u.LastLearningUpdatedAt = at.Int64
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.fail("learning users", err)
	}
	return out, total, nil
}

func scanLearning(sc scanner) (*db.Learning, error) {
	var (
		l                                                 db.Learning
		ns, user, agent, team, wf, session, entity, etype sql.NullString
		content, metadata                                 []byte
		updated                                           looseNull
	)
	if err := sc.Scan(&l.LearningID, &l.LearningType, &ns, &user, &agent, &team, &wf, &session, &entity, &etype,
		&content, &metadata, intCol{&l.CreatedAt}, &updated); err != nil {
		return nil, undecodable("learnings", l.LearningID, err)
	}
	l.Namespace, l.UserID, l.AgentID, l.TeamID, l.WorkflowID = ns.String, user.String, agent.String, team.String, wf.String
	l.SessionID, l.EntityID, l.EntityType, l.UpdatedAt = session.String, entity.String, etype.String, updated.Int64
	var err error
	if l.Content, err = decodeJSON(content); err != nil {
		return nil, &db.CorruptRowError{Table: "learnings", ID: l.LearningID, Err: err}
	}
	if l.Metadata, err = decodeJSON(metadata); err != nil {
		return nil, &db.CorruptRowError{Table: "learnings", ID: l.LearningID, Err: err}
	}
	return &l, nil
}
