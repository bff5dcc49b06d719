package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

const runCols = "run_id, session_id, run_type, agent_id, team_id, workflow_id, user_id, parent_run_id, status, run_index, run_data, created_at, updated_at"

// UpsertRun inserts one run row, or updates status, run_data, user_id,
// parent_run_id and updated_at of an existing one, keeping its run_index. A
// nil run_index becomes max+1 within the session; assignment is serialised per
// session (Postgres: advisory transaction lock; MySQL: the session row locked
// FOR UPDATE; SQLite: the single writer connection's BEGIN IMMEDIATE).
// A scoped caller cannot overwrite another user's run (ErrNotFound).
func (s *Store) UpsertRun(ctx context.Context, in *db.Run) (*db.Run, error) {
	out := *in
	scopedUser, scoped := db.UserScope(ctx)
	if scoped {
		out.UserID = scopedUser
	}
	opts := &sql.TxOptions{}
	if s.d.Name != SQLite {
		opts.Isolation = sql.LevelReadCommitted
	}
	tx, err := s.w.BeginTx(ctx, opts)
	if err != nil {
		return nil, s.fail("upsert run "+in.RunID, err)
	}
	defer tx.Rollback()
	if lock := s.d.lockSession(s.sessions); lock != "" {
		rows, err := tx.QueryContext(ctx, s.d.Rebind(lock), in.SessionID)
		if err != nil {
			return nil, s.fail("lock session "+in.SessionID, err)
		}
		rows.Close()
	}
	var (
		idx       sql.NullInt64
		owner     sql.NullString
		createdAt int64
	)
	err = tx.QueryRowContext(ctx, s.d.Rebind("SELECT run_index, user_id, created_at FROM "+s.runs+" WHERE run_id = ?"), in.RunID).
		Scan(&idx, &owner, &createdAt)
	switch {
	case err == nil:
		if scoped && owner.Valid && owner.String != scopedUser {
			return nil, fmt.Errorf("%w: run %s", db.ErrNotFound, in.RunID)
		}
		upd := "UPDATE " + s.runs + " SET status = ?, run_data = ?, user_id = ?, parent_run_id = ?, updated_at = ? WHERE run_id = ?"
		if _, err := tx.ExecContext(ctx, s.d.Rebind(upd), nullStr(string(out.Status)), jsonArg(out.RunData),
			nullStr(out.UserID), nullStr(out.ParentRunID), out.UpdatedAt, out.RunID); err != nil {
			return nil, s.fail("update run "+in.RunID, err)
		}
		out.RunIndex, out.CreatedAt = nil, createdAt
		if idx.Valid {
			out.RunIndex = &idx.Int64
		}
	case errors.Is(err, sql.ErrNoRows):
		if out.RunIndex == nil {
			var next int64
			q := "SELECT COALESCE(MAX(run_index) + 1, 0) FROM " + s.runs + " WHERE session_id = ?"
			if err := tx.QueryRowContext(ctx, s.d.Rebind(q), in.SessionID).Scan(&next); err != nil {
				return nil, s.fail("assign run_index for run "+in.RunID, err)
			}
			out.RunIndex = &next
		} else {
			v := *out.RunIndex
			out.RunIndex = &v
		}
		ins := "INSERT INTO " + s.runs + " (" + runCols + ") VALUES (" + placeholders(13) + ")"
		if _, err := tx.ExecContext(ctx, s.d.Rebind(ins), out.RunID, out.SessionID, string(out.RunType),
			nullStr(out.AgentID), nullStr(out.TeamID), nullStr(out.WorkflowID), nullStr(out.UserID), nullStr(out.ParentRunID),
			nullStr(string(out.Status)), *out.RunIndex, jsonArg(out.RunData), out.CreatedAt, out.UpdatedAt); err != nil {
			if isForeignKeyViolation(err) {
				return nil, fmt.Errorf("%w: run %s: session %s does not exist (store the session first)", db.ErrInvalidRecord, in.RunID, in.SessionID)
			}
			return nil, s.fail("insert run "+in.RunID, err)
		}
	default:
		return nil, s.fail("upsert run "+in.RunID, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, s.fail("upsert run "+in.RunID, err)
	}
	return &out, nil
}

// isForeignKeyViolation recognises each backend's FK error: SQLite's
// constraint message, Postgres SQLSTATE 23503, MySQL error 1452.
func isForeignKeyViolation(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "FOREIGN KEY constraint failed") || strings.Contains(msg, "SQLSTATE 23503") ||
		strings.Contains(msg, "Error 1452")
}

// GetRun returns a run in scope or ErrNotFound; a row whose run_data is not
// JSON is a *db.CorruptRowError.
func (s *Store) GetRun(ctx context.Context, runID string) (*db.Run, error) {
	w := &where{}
	w.add("run_id = ?", runID)
	scope(ctx, w)
	r, err := scanRun(s.r.QueryRowContext(ctx, s.d.Rebind("SELECT "+runCols+" FROM "+s.runs+w.String()), w.args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: run %s", db.ErrNotFound, runID)
	}
	var corrupt *db.CorruptRowError
	if errors.As(err, &corrupt) {
		return nil, err
	}
	if err != nil {
		return nil, s.fail("get run "+runID, err)
	}
	return r, nil
}

// runWhere builds the conditions of a RunFilter plus the context's scope.
func runWhere(ctx context.Context, f db.RunFilter) *where {
	w := &where{}
	w.eq("session_id", f.SessionID)
	w.eq("user_id", f.UserID)
	w.eq("agent_id", f.AgentID)
	w.eq("team_id", f.TeamID)
	w.eq("workflow_id", f.WorkflowID)
	w.eq("parent_run_id", f.ParentRunID)
	w.eq("run_type", string(f.RunType))
	if len(f.Statuses) > 0 {
		w.add("status IN ("+placeholders(len(f.Statuses))+")", anys(f.Statuses)...)
	}
	scope(ctx, w)
	return w
}

// GetRuns returns one page; the count is the total when f.WithTotal, else -1.
// Rows whose run_data is corrupt are left out of the page and reported as
// *db.CorruptRowError (joined) next to the rows that did decode.
//
// Page numbers are exact (LIMIT/OFFSET over the (session_id, run_index)
// index); f.AfterRunIndex is the keyset cursor that makes deep pages of a
// session cost the same as the first.
func (s *Store) GetRuns(ctx context.Context, f db.RunFilter) ([]db.Run, int, error) {
	w := runWhere(ctx, f)
	total := -1
	if f.WithTotal {
		if err := s.r.QueryRowContext(ctx, s.d.Rebind("SELECT COUNT(*) FROM "+s.runs+w.String()), w.args...).Scan(&total); err != nil {
			return nil, 0, s.fail("count runs", err)
		}
	}
	d := dir(f.SortOrder)
	var order string
	switch sortCol(f.SortBy, "run_index", "run_index", "created_at", "updated_at") {
	case "created_at":
		order = "created_at " + d + ", run_index " + d
	case "updated_at":
		order = "updated_at " + d + ", run_index " + d
	default:
		order = "run_index " + d + ", created_at " + d
	}
	order += ", run_id " + d
	if f.AfterRunIndex != nil {
		if d == "DESC" {
			w.add("run_index < ?", *f.AfterRunIndex)
		} else {
			w.add("run_index > ?", *f.AfterRunIndex)
		}
	}
	q := fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s LIMIT %d", runCols, s.runs, w.String(), order, f.Limit)
	if off := offset(f.Limit, f.Page); off > 0 {
		q += fmt.Sprintf(" OFFSET %d", off)
	}
	out, err := s.queryRuns(ctx, q, w.args...)
	return out, total, err
}

// HistoryRuns returns the last q.Limit runs of a session that feed context
// (status not PAUSED, CANCELLED or ERROR; no parent run), oldest first, with
// one bounded query.
func (s *Store) HistoryRuns(ctx context.Context, hq db.HistoryQuery) ([]db.Run, error) {
	w := &where{}
	w.add("session_id = ?", hq.SessionID)
	w.add("parent_run_id IS NULL")
	w.add("(status IS NULL OR status NOT IN (?, ?, ?))", string(run.StatusPaused), string(run.StatusCancelled), string(run.StatusError))
	w.eq("agent_id", hq.AgentID)
	w.eq("team_id", hq.TeamID)
	scope(ctx, w)
	q := fmt.Sprintf("SELECT %s FROM %s%s ORDER BY run_index DESC, created_at DESC, run_id DESC LIMIT %d", runCols, s.runs, w.String(), hq.Limit)
	out, err := s.queryRuns(ctx, q, w.args...)
	slices.Reverse(out)
	return out, err
}

// DeleteRun deletes one run in scope; ErrNotFound if absent.
func (s *Store) DeleteRun(ctx context.Context, runID string) error {
	w := &where{}
	w.add("run_id = ?", runID)
	scope(ctx, w)
	res, err := s.w.ExecContext(ctx, s.d.Rebind("DELETE FROM "+s.runs+w.String()), w.args...)
	if err != nil {
		return s.fail("delete run "+runID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("%w: run %s", db.ErrNotFound, runID)
	}
	return nil
}

func (s *Store) queryRuns(ctx context.Context, q string, args ...any) ([]db.Run, error) {
	rows, err := s.r.QueryContext(ctx, s.d.Rebind(q), args...)
	if err != nil {
		return nil, s.fail("get runs", err)
	}
	defer rows.Close()
	out := []db.Run{}
	var corrupt []error
	for rows.Next() {
		r, err := scanRun(rows)
		var ce *db.CorruptRowError
		switch {
		case errors.As(err, &ce):
			corrupt = append(corrupt, err)
		case err != nil:
			return out, s.fail("get runs", err)
		default:
			out = append(out, *r)
		}
	}
	if err := rows.Err(); err != nil {
		return out, s.fail("get runs", err)
	}
	return out, errors.Join(corrupt...)
}

func scanRun(sc scanner) (*db.Run, error) {
	var (
		r                                 db.Run
		typ                               string
		agent, team, wf, user, parent, st sql.NullString
		idx, updated                      sql.NullInt64
		data                              []byte
	)
	if err := sc.Scan(&r.RunID, &r.SessionID, &typ, &agent, &team, &wf, &user, &parent, &st, &idx, &data, &r.CreatedAt, &updated); err != nil {
		return nil, err
	}
	r.RunType, r.Status = run.Type(typ), run.Status(st.String)
	r.AgentID, r.TeamID, r.WorkflowID, r.UserID, r.ParentRunID = agent.String, team.String, wf.String, user.String, parent.String
	r.UpdatedAt = updated.Int64
	if idx.Valid {
		r.RunIndex = &idx.Int64
	}
	v, err := decodeJSON(data)
	if err == nil && len(v) == 0 {
		err = errors.New("run_data is empty")
	}
	if err != nil {
		return nil, &db.CorruptRowError{Table: "runs", ID: r.RunID, Err: err}
	}
	r.RunData = v
	return &r, nil
}
