package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/db"
)

const approvalCols = "id, run_id, session_id, status, source_type, approval_type, pause_type, tool_name, tool_args, expires_at, agent_id, team_id, " +
	"workflow_id, user_id, schedule_id, schedule_run_id, source_name, requirements, context, resolution_data, resolved_by, resolved_at, created_at, updated_at, run_status"

// CreateApproval inserts a row; an existing id is left alone.
func (s *Store) CreateApproval(ctx context.Context, a *db.Approval) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	_, err := s.d.Inserted(s.w.ExecContext(ctx, s.d.Bind(s.d.InsertIgnore(s.approvs, splitCols(approvalCols), "id")),
		a.ID, a.RunID, a.SessionID, a.Status, a.SourceType, nullStr(a.ApprovalType), a.PauseType, nullStr(a.ToolName), s.jsonArg(a.ToolArgs),
		nullInt(a.ExpiresAt), nullStr(a.AgentID), nullStr(a.TeamID), nullStr(a.WorkflowID), nullStr(a.UserID), nullStr(a.ScheduleID),
		nullStr(a.ScheduleRunID), nullStr(a.SourceName), s.jsonArg(a.Requirements), s.jsonArg(a.Context), s.jsonArg(a.ResolutionData),
		nullStr(a.ResolvedBy), nullInt(a.ResolvedAt), a.CreatedAt, nullInt(a.UpdatedAt), nullStr(a.RunStatus)))
	return s.fail("insert approval "+a.ID, err)
}

func scanApproval(sc scanner) (*db.Approval, error) {
	var a db.Approval
	var appType, tool, agentID, teamID, wfID, user, sched, schedRun, source, by, runStatus sql.NullString
	var toolArgs, reqs, ctxJSON, res []byte
	var expires, resolvedAt, updated looseNull
	if err := sc.Scan(&a.ID, &a.RunID, &a.SessionID, &a.Status, &a.SourceType, &appType, &a.PauseType, &tool, &toolArgs, &expires,
		&agentID, &teamID, &wfID, &user, &sched, &schedRun, &source, &reqs, &ctxJSON, &res, &by, &resolvedAt, intCol{&a.CreatedAt}, &updated, &runStatus); err != nil {
		return nil, undecodable("approvals", a.ID, err)
	}
	a.ApprovalType, a.ToolName, a.AgentID, a.TeamID, a.WorkflowID = appType.String, tool.String, agentID.String, teamID.String, wfID.String
	a.UserID, a.ScheduleID, a.ScheduleRunID, a.SourceName, a.ResolvedBy, a.RunStatus = user.String, sched.String, schedRun.String, source.String, by.String, runStatus.String
	a.ExpiresAt, a.ResolvedAt, a.UpdatedAt = expires.Int64, resolvedAt.Int64, updated.Int64
	for _, j := range []struct {
		dst *json.RawMessage
		b   []byte
	}{{&a.ToolArgs, toolArgs}, {&a.Requirements, reqs}, {&a.Context, ctxJSON}, {&a.ResolutionData, res}} {
		v, err := decodeJSON(j.b)
		if err != nil {
			return nil, &db.CorruptRowError{Table: "approvals", ID: a.ID, Err: err}
		}
		*j.dst = v
	}
	return &a, nil
}

// GetApproval returns a row in scope or db.ErrNotFound.
func (s *Store) GetApproval(ctx context.Context, id string) (*db.Approval, error) {
	w := &where{}
	w.add("id = ?", id)
	s.scope(ctx, w)
	a, err := scanApproval(s.r.QueryRowContext(ctx, s.d.Bind("SELECT "+approvalCols+" FROM "+s.approvs+w.String()), w.args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: approval %s", db.ErrNotFound, id)
	}
	if err != nil {
		return nil, s.fail("get approval "+id, err)
	}
	return a, nil
}

// ListApprovals pages rows in scope, newest first, and counts the matches;
// an undecodable row is left out and reported as in ListSessions.
func (s *Store) ListApprovals(ctx context.Context, f db.ApprovalFilter) ([]db.Approval, int, error) {
	w := &where{}
	w.eq("status", f.Status)
	w.eq("source_type", f.SourceType)
	w.eq("approval_type", f.ApprovalType)
	w.eq("pause_type", f.PauseType)
	w.eq("agent_id", f.AgentID)
	w.eq("team_id", f.TeamID)
	w.eq("workflow_id", f.WorkflowID)
	s.userEq(w, "user_id", f.UserID)
	w.eq("run_id", f.RunID)
	s.scope(ctx, w)
	var total int
	if err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(*) FROM "+s.approvs+w.String()), w.args...).Scan(&total); err != nil {
		return nil, 0, s.fail("count approvals", err)
	}
	rows, err := s.r.QueryContext(ctx, s.d.Bind("SELECT "+approvalCols+" FROM "+s.approvs+w.String()+
		fmt.Sprintf(" ORDER BY created_at DESC, id DESC LIMIT %d OFFSET %d", f.Limit, (f.Page-1)*f.Limit)), w.args...)
	if err != nil {
		return nil, 0, s.fail("list approvals", err)
	}
	defer rows.Close()
	out, corrupt, err := decodeRows(rows, []db.Approval(nil), scanApproval)
	if err != nil {
		return nil, 0, s.fail("list approvals", err)
	}
	return out, total, corrupt
}

// ResolveApproval moves a pending row in scope to status: one UPDATE
// guarded by status = pending, so two resolutions cannot both win.
func (s *Store) ResolveApproval(ctx context.Context, id, status, resolvedBy string, data json.RawMessage, at int64) (*db.Approval, error) {
	w := &where{}
	w.add("id = ?", id)
	w.add("status = ?", db.ApprovalPending)
	s.scope(ctx, w)
	if err := s.gate.enter(ctx); err != nil {
		return nil, err
	}
	res, err := s.w.ExecContext(ctx, s.d.Bind("UPDATE "+s.approvs+" SET status = ?, resolved_by = ?, resolution_data = ?, resolved_at = ?, updated_at = ?"+w.String()),
		append([]any{status, nullStr(resolvedBy), s.jsonArg(data), at, at}, w.args...)...)
	s.gate.leave()
	if err != nil {
		return nil, s.fail("resolve approval "+id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		a, gerr := s.GetApproval(ctx, id)
		if gerr != nil {
			return nil, gerr
		}
		return nil, fmt.Errorf("%w: approval %s is %s", db.ErrApprovalResolved, id, a.Status)
	}
	return s.GetApproval(ctx, id)
}

// SetApprovalsRunStatus records a run's status on its approvals in scope;
// after the run ended, its pending approvals become expired.
func (s *Store) SetApprovalsRunStatus(ctx context.Context, runID, runStatus string, at int64) error {
	w := &where{}
	w.add("run_id = ?", runID)
	s.scope(ctx, w)
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	_, err := s.w.ExecContext(ctx, s.d.Bind("UPDATE "+s.approvs+" SET run_status = ?, updated_at = ?"+w.String()), append([]any{runStatus, at}, w.args...)...)
	if err == nil && (runStatus == "COMPLETED" || runStatus == "ERROR" || runStatus == "CANCELLED") {
		w.add("status = ?", db.ApprovalPending)
		_, err = s.w.ExecContext(ctx, s.d.Bind("UPDATE "+s.approvs+" SET status = ?"+w.String()), append([]any{db.ApprovalExpired}, w.args...)...)
	}
	return s.fail("set approvals run status "+runID, err)
}
