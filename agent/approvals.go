package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// A top-level agent or team run that pauses for a tool is also a row of the
// review queue (agno_approvals, as a workflow pause is): one pending
// approval per pause, listed by GET /approvals. Continuing the run resolves
// it (approved, or rejected when every tool call was rejected) and the
// run's end is recorded on it. Member and step runs (parent_run_id set) are
// covered by their team's or workflow's approval.

// PauseApprovalID is the id of the approval a paused agent or team run was
// queued as: a name-based UUID of the run id and the id of its pause's
// first requirement (a run keeps only its current pause's requirements,
// resolved in place or not).
func PauseApprovalID(out *run.Output) string {
	if k := pauseKey(out); k != "" {
		return db.ApprovalKeyID(k)
	}
	return ""
}

// IsPauseApproval reports whether id is the approval of out's pause, under
// its UUID or under the "run:requirement" id earlier versions stored.
func IsPauseApproval(out *run.Output, id string) bool {
	k := pauseKey(out)
	return k != "" && (id == db.ApprovalKeyID(k) || id == k)
}

func pauseKey(out *run.Output) string {
	for i := range out.Requirements {
		if r := &out.Requirements[i]; r.ID != "" {
			return out.RunID + ":" + r.ID
		}
	}
	return ""
}

func toolPauseType(t *run.ToolExecution) string {
	switch {
	case t == nil:
		return "confirmation"
	case t.RequiresUserInput:
		return "user_input"
	case t.ExternalExecutionRequired:
		return "external_execution"
	}
	return "confirmation"
}

// queueApproval stores the pending approval of a run that just paused.
func (st *state) queueApproval(ctx context.Context, d *db.DB, out *run.Output) {
	id := PauseApprovalID(out)
	if id == "" {
		return
	}
	var pending []run.Requirement
	var names []string
	for _, r := range out.Requirements {
		if !r.Resolved() {
			pending = append(pending, r)
			if r.ToolExecution != nil {
				names = append(names, r.ToolExecution.ToolName)
			}
		}
	}
	first := pending[0].ToolExecution
	reqs, _ := json.Marshal(pending)
	c := st.p.comp
	name := cmp.Or(c.Name, c.ID)
	ctxJSON, _ := json.Marshal(map[string]any{"tool_names": names, "source_name": name})
	a := &db.Approval{ID: id, RunID: out.RunID, SessionID: out.SessionID, SourceType: string(c.Type), ApprovalType: "required",
		PauseType: toolPauseType(first), UserID: out.UserID, SourceName: name, Requirements: reqs, Context: ctxJSON,
		RunStatus: string(run.StatusPaused)}
	if first != nil {
		a.ToolName, a.ToolArgs = first.ToolName, first.ToolArgs
	}
	if c.Type == run.TypeTeam {
		a.TeamID = c.ID
	} else {
		a.AgentID = c.ID
	}
	if err := d.CreateApproval(ctx, a); err != nil {
		slog.Warn("agent: queueing the approval of a paused run failed", "run_id", out.RunID, "error", err)
	}
}

// followApprovals keeps the review queue in step with a top-level run that
// paused (a new approval) or was continued (its approval resolved, the
// run's status recorded).
func (st *state) followApprovals(ctx context.Context, d *db.DB, out *run.Output) {
	if out.ParentRunID != "" || (out.Status != run.StatusPaused && st.pausedApproval() == "") {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if st.pausedApproval() != "" {
		status := db.ApprovalRejected
		for _, p := range st.ext.resume {
			if p.exec.Confirmed == nil || *p.exec.Confirmed {
				status = db.ApprovalApproved
			}
		}
		// The pending approvals of the pause just continued (a team's
		// leader run keeps its members' requirements apart: list them).
		pending, _, err := d.ListApprovals(ctx, db.ApprovalFilter{RunID: out.RunID, Status: db.ApprovalPending, Limit: 100, Page: 1})
		for _, a := range pending {
			_, err = d.ResolveApproval(ctx, a.ID, status, cmp.Or(out.UserID, "continue"), nil)
			if err != nil && !errors.Is(err, db.ErrApprovalResolved) && !errors.Is(err, db.ErrNotFound) {
				break
			}
			err = nil
		}
		if err != nil {
			slog.Warn("agent: resolving the approval of a continued run failed", "run_id", out.RunID, "error", err)
		}
		if err := d.SetApprovalsRunStatus(ctx, out.RunID, string(out.Status)); err != nil {
			slog.Warn("agent: recording the run status on its approvals failed", "run_id", out.RunID, "error", err)
		}
		st.ext.pausedApproval = ""
	}
	if out.Status == run.StatusPaused {
		st.queueApproval(ctx, d, out)
	}
}
