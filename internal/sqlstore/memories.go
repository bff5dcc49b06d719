package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentryhq/agentry/db"
)

const memoryCols = "memory_id, memory, feedback, input, agent_id, team_id, user_id, topics, created_at, updated_at"

// UpsertMemory inserts a memory, or updates it where the stored user_id is
// NULL or equals the record's; otherwise ErrNotFound.
func (s *Store) UpsertMemory(ctx context.Context, m *db.Memory) (*db.Memory, error) {
	if u, ok := db.UserScope(ctx); ok {
		cp := *m
		cp.UserID = u
		m = &cp
	}
	text, _ := json.Marshal(m.Memory)
	var topics any
	if m.Topics != nil {
		b, _ := json.Marshal(m.Topics)
		topics = s.jsonText(b)
	}
	data := []any{s.jsonText(text), s.nullText(m.Feedback), s.nullText(m.Input), nullStr(m.AgentID), nullStr(m.TeamID), nullStr(m.UserID), topics}
	args := append(append([]any{m.MemoryID}, data...), m.CreatedAt, m.UpdatedAt)
	inserted, err := s.d.Inserted(s.w.ExecContext(ctx, s.d.Bind(s.d.InsertIgnore(s.memories, splitCols(memoryCols), "memory_id")), args...))
	if err != nil {
		return nil, s.fail("upsert memory "+m.MemoryID, err)
	}
	if !inserted {
		upd := "UPDATE " + s.memories + ` SET memory = ?, feedback = ?, input = ?, agent_id = ?, team_id = ?, user_id = ?, topics = ?, updated_at = ?
			WHERE memory_id = ? AND (user_id IS NULL OR ` + s.d.EqExact("user_id") + ")"
		res, err := s.w.ExecContext(ctx, s.d.Bind(upd), append(data, m.UpdatedAt, m.MemoryID, nullStr(m.UserID))...)
		if err != nil {
			return nil, s.fail("upsert memory "+m.MemoryID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, fmt.Errorf("%w: memory %s belongs to another user", db.ErrNotFound, m.MemoryID)
		}
	}
	return s.getMemory(ctx, s.w, m.MemoryID, "", false)
}

// GetMemory returns a memory in scope or ErrNotFound.
func (s *Store) GetMemory(ctx context.Context, memoryID string) (*db.Memory, error) {
	u, ok := db.UserScope(ctx)
	return s.getMemory(ctx, s.r, memoryID, u, ok)
}

func (s *Store) getMemory(ctx context.Context, q *sql.DB, id, user string, scoped bool) (*db.Memory, error) {
	w := &where{}
	w.add("memory_id = ?", id)
	if scoped {
		w.add(s.d.EqExact("user_id"), user)
	}
	m, err := scanMemory(q.QueryRowContext(ctx, s.d.Bind("SELECT "+memoryCols+" FROM "+s.memories+w.String()), w.args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: memory %s", db.ErrNotFound, id)
	}
	if err != nil {
		return nil, s.fail("get memory "+id, err)
	}
	return m, nil
}

// ListMemories returns one page and the total count; an undecodable row is
// left out and reported as in ListSessions.
func (s *Store) ListMemories(ctx context.Context, f db.MemoryFilter) ([]db.Memory, int, error) {
	w := &where{}
	s.userEq(w, "user_id", f.UserID)
	w.eq("agent_id", f.AgentID)
	w.eq("team_id", f.TeamID)
	s.scope(ctx, w)
	if len(f.Topics) > 0 {
		w.add(s.d.JSONArrayHasAny("topics", len(f.Topics)), anys(f.Topics)...)
	}
	if f.SearchContent != "" {
		w.add(s.d.LikeContains(s.d.JSONString("memory")), ContainsPattern(f.SearchContent))
	}
	var total int
	if err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(*) FROM "+s.memories+w.String()), w.args...).Scan(&total); err != nil {
		return nil, 0, s.fail("count memories", err)
	}
	d := dir(f.SortOrder)
	q := fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s %s, memory_id %s LIMIT %d OFFSET %d", memoryCols, s.memories, w.String(),
		sortCol(f.SortBy, "updated_at", "updated_at", "created_at"), d, d, f.Limit, offset(f.Limit, f.Page))
	rows, err := s.r.QueryContext(ctx, s.d.Bind(q), w.args...)
	if err != nil {
		return nil, 0, s.fail("list memories", err)
	}
	defer rows.Close()
	out := []db.Memory{}
	var corrupt []error
	for rows.Next() {
		m, err := scanMemory(rows)
		var ce *db.CorruptRowError
		switch {
		case errors.As(err, &ce):
			corrupt = append(corrupt, err)
		case err != nil:
			return nil, 0, s.fail("list memories", err)
		default:
			out = append(out, *m)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.fail("list memories", err)
	}
	return out, total, errors.Join(corrupt...)
}

// DeleteMemories deletes memories in scope; missing ids are ignored.
func (s *Store) DeleteMemories(ctx context.Context, memoryIDs ...string) error {
	for chunk := range chunks(memoryIDs, 500) {
		w := &where{}
		w.add("memory_id IN ("+placeholders(len(chunk))+")", anys(chunk)...)
		s.scope(ctx, w)
		if _, err := s.w.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.memories+w.String()), w.args...); err != nil {
			return s.fail("delete memories", err)
		}
	}
	return nil
}

// MemoryTopics lists distinct topics in scope, sorted.
func (s *Store) MemoryTopics(ctx context.Context) ([]string, error) {
	w := &where{}
	w.add("topics IS NOT NULL")
	s.scope(ctx, w)
	rows, err := s.r.QueryContext(ctx, s.d.Bind("SELECT topics FROM "+s.memories+w.String()), w.args...)
	if err != nil {
		return nil, s.fail("memory topics", err)
	}
	defer rows.Close()
	seen := map[string]bool{}
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, s.fail("memory topics", err)
		}
		for _, t := range decodeTopics(raw) {
			seen[t] = true
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("memory topics", err)
	}
	out := make([]string, 0, len(seen))
	for t := range seen {
		out = append(out, t)
	}
	slices.Sort(out)
	return out, nil
}

// UserMemoryStats pages per-user counts, most recently updated first.
func (s *Store) UserMemoryStats(ctx context.Context, limit, page int) ([]db.UserMemoryStats, int, error) {
	w := &where{}
	w.add("user_id IS NOT NULL")
	s.scope(ctx, w)
	var total int
	if err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(DISTINCT user_id) FROM "+s.memories+w.String()), w.args...).Scan(&total); err != nil {
		return nil, 0, s.fail("memory stats", err)
	}
	q := fmt.Sprintf("SELECT user_id, COUNT(*), COALESCE(MAX(updated_at), 0) FROM %s%s GROUP BY user_id ORDER BY 3 DESC, user_id LIMIT %d OFFSET %d",
		s.memories, w.String(), limit, offset(limit, page))
	rows, err := s.r.QueryContext(ctx, s.d.Bind(q), w.args...)
	if err != nil {
		return nil, 0, s.fail("memory stats", err)
	}
	defer rows.Close()
	out := []db.UserMemoryStats{}
	for rows.Next() {
		var st db.UserMemoryStats
		if err := rows.Scan(&st.UserID, &st.TotalMemories, &st.LastMemoryUpdatedAt); err != nil {
			return nil, 0, s.fail("memory stats", err)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.fail("memory stats", err)
	}
	return out, total, nil
}

func decodeTopics(raw []byte) []string {
	v, err := decodeJSON(raw)
	if err != nil || len(v) == 0 {
		return nil
	}
	var topics []string
	if json.Unmarshal(v, &topics) != nil {
		return nil
	}
	return topics
}

func scanMemory(sc scanner) (*db.Memory, error) {
	var (
		m                                  db.Memory
		text, topics                       []byte
		feedback, input, agent, team, user sql.NullString
		created, updated                   looseNull
	)
	if err := sc.Scan(&m.MemoryID, &text, &feedback, &input, &agent, &team, &user, &topics, &created, &updated); err != nil {
		return nil, undecodable("memories", m.MemoryID, err)
	}
	m.Memory = decodeJSONString(text)
	m.Feedback, m.Input, m.AgentID, m.TeamID, m.UserID = feedback.String, input.String, agent.String, team.String, user.String
	m.Topics = decodeTopics(topics)
	m.CreatedAt, m.UpdatedAt = created.Int64, updated.Int64
	return &m, nil
}
