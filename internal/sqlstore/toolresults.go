package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/db"
)

const toolResultCols = "result_id, namespace, path, session_id, run_id, tool_call_id, tool_name, args_hash, content_type, size_bytes, line_count, preview, user_id, created_at, expires_at"

func nullInt(n int64) any {
	if n == 0 {
		return nil
	}
	return n
}

// UpsertToolResult inserts an index row or, when its result_id exists,
// updates it: two statements, the update guarded by the user scope so that
// another user's row is left alone (db.ErrNotFound).
func (s *Store) UpsertToolResult(ctx context.Context, r *db.ToolResult) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	inserted, err := s.d.Inserted(s.w.ExecContext(ctx, s.d.Bind(s.d.InsertIgnore(s.results, splitCols(toolResultCols), "result_id")),
		r.ResultID, r.Namespace, r.Path, nullStr(r.SessionID), nullStr(r.RunID), nullStr(r.ToolCallID), nullStr(r.ToolName),
		nullStr(r.ArgsHash), nullStr(r.ContentType), r.SizeBytes, r.LineCount, r.Preview, nullStr(r.UserID), r.CreatedAt, nullInt(r.ExpiresAt)))
	if err != nil {
		return s.fail("insert tool result "+r.ResultID, err)
	}
	if inserted {
		return nil
	}
	w := &where{}
	w.add("result_id = ?", r.ResultID)
	s.scope(ctx, w)
	args := append([]any{r.Namespace, r.Path, nullStr(r.SessionID), nullStr(r.RunID), nullStr(r.ToolCallID), nullStr(r.ToolName),
		nullStr(r.ArgsHash), nullStr(r.ContentType), r.SizeBytes, r.LineCount, r.Preview, nullInt(r.ExpiresAt)}, w.args...)
	res, err := s.w.ExecContext(ctx, s.d.Bind("UPDATE "+s.results+` SET namespace = ?, path = ?, session_id = ?, run_id = ?,
		tool_call_id = ?, tool_name = ?, args_hash = ?, content_type = ?, size_bytes = ?, line_count = ?, preview = ?, expires_at = ?`+w.String()), args...)
	if err != nil {
		return s.fail("update tool result "+r.ResultID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return fmt.Errorf("%w: tool result %s", db.ErrNotFound, r.ResultID)
	}
	return nil
}

func scanToolResult(sc interface{ Scan(...any) error }) (*db.ToolResult, error) {
	var r db.ToolResult
	var session, runID, call, name, hash, ctype, preview, user sql.NullString
	var expires looseNull
	if err := sc.Scan(&r.ResultID, &r.Namespace, &r.Path, &session, &runID, &call, &name, &hash, &ctype, &r.SizeBytes, &r.LineCount,
		&preview, &user, intCol{&r.CreatedAt}, &expires); err != nil {
		return nil, err
	}
	r.SessionID, r.RunID, r.ToolCallID, r.ToolName = session.String, runID.String, call.String, name.String
	r.ArgsHash, r.ContentType, r.Preview, r.UserID, r.ExpiresAt = hash.String, ctype.String, preview.String, user.String, expires.Int64
	return &r, nil
}

// GetToolResult returns an index row in scope or db.ErrNotFound.
func (s *Store) GetToolResult(ctx context.Context, resultID string) (*db.ToolResult, error) {
	w := &where{}
	w.add("result_id = ?", resultID)
	s.scope(ctx, w)
	r, err := scanToolResult(s.r.QueryRowContext(ctx, s.d.Bind("SELECT "+toolResultCols+" FROM "+s.results+w.String()), w.args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: tool result %s", db.ErrNotFound, resultID)
	}
	if err != nil {
		return nil, s.fail("get tool result "+resultID, err)
	}
	return r, nil
}

func (s *Store) listToolResults(ctx context.Context, op, q string, args ...any) ([]db.ToolResult, error) {
	rows, err := s.r.QueryContext(ctx, s.d.Bind(q), args...)
	if err != nil {
		return nil, s.fail(op, err)
	}
	defer rows.Close()
	var out []db.ToolResult
	for rows.Next() {
		r, err := scanToolResult(rows)
		if err != nil {
			return nil, s.fail(op, err)
		}
		out = append(out, *r)
	}
	return out, s.fail(op, rows.Err())
}

// ListToolResults returns a session's rows in scope, newest first.
func (s *Store) ListToolResults(ctx context.Context, sessionID string, limit int) ([]db.ToolResult, error) {
	w := &where{}
	w.add("session_id = ?", sessionID)
	s.scope(ctx, w)
	return s.listToolResults(ctx, "list tool results", "SELECT "+toolResultCols+" FROM "+s.results+w.String()+
		fmt.Sprintf(" ORDER BY created_at DESC, result_id DESC LIMIT %d", limit), w.args...)
}

// DeleteToolResult deletes a row in scope.
func (s *Store) DeleteToolResult(ctx context.Context, resultID string) error {
	w := &where{}
	w.add("result_id = ?", resultID)
	s.scope(ctx, w)
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	_, err := s.w.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.results+w.String()), w.args...)
	return s.fail("delete tool result "+resultID, err)
}

// ExpiredToolResults returns rows past their expiry, oldest first.
func (s *Store) ExpiredToolResults(ctx context.Context, now int64, limit int) ([]db.ToolResult, error) {
	w := &where{}
	w.add("expires_at IS NOT NULL AND expires_at < ?", now)
	s.scope(ctx, w)
	return s.listToolResults(ctx, "expired tool results", "SELECT "+toolResultCols+" FROM "+s.results+w.String()+
		fmt.Sprintf(" ORDER BY expires_at, result_id LIMIT %d", limit), w.args...)
}
