package agentos

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/workflow"
)

// approvalView is AgentOS 3.0's ApprovalResponse.
type approvalView struct {
	ID             string          `json:"id"`
	RunID          string          `json:"run_id"`
	SessionID      string          `json:"session_id"`
	Status         string          `json:"status"`
	SourceType     string          `json:"source_type"`
	ApprovalType   *string         `json:"approval_type"`
	PauseType      *string         `json:"pause_type"`
	ToolName       *string         `json:"tool_name"`
	ToolArgs       json.RawMessage `json:"tool_args"`
	ExpiresAt      *int64          `json:"expires_at"`
	AgentID        *string         `json:"agent_id"`
	TeamID         *string         `json:"team_id"`
	WorkflowID     *string         `json:"workflow_id"`
	UserID         *string         `json:"user_id"`
	ScheduleID     *string         `json:"schedule_id"`
	ScheduleRunID  *string         `json:"schedule_run_id"`
	SourceName     *string         `json:"source_name"`
	Requirements   json.RawMessage `json:"requirements"`
	Context        json.RawMessage `json:"context"`
	ResolutionData json.RawMessage `json:"resolution_data"`
	ResolvedBy     *string         `json:"resolved_by"`
	ResolvedAt     *int64          `json:"resolved_at"`
	CreatedAt      *int64          `json:"created_at"`
	UpdatedAt      *int64          `json:"updated_at"`
	RunStatus      *string         `json:"run_status"`
}

func optInt(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

func rawOrNull(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("null")
	}
	return b
}

func newApprovalView(a *db.Approval) approvalView {
	return approvalView{ID: a.ID, RunID: a.RunID, SessionID: a.SessionID, Status: a.Status, SourceType: a.SourceType,
		ApprovalType: optional(a.ApprovalType), PauseType: optional(a.PauseType), ToolName: optional(a.ToolName), ToolArgs: rawOrNull(a.ToolArgs),
		ExpiresAt: optInt(a.ExpiresAt), AgentID: optional(a.AgentID), TeamID: optional(a.TeamID), WorkflowID: optional(a.WorkflowID),
		UserID: optional(a.UserID), ScheduleID: optional(a.ScheduleID), ScheduleRunID: optional(a.ScheduleRunID), SourceName: optional(a.SourceName),
		Requirements: rawOrNull(a.Requirements), Context: rawOrNull(a.Context), ResolutionData: rawOrNull(a.ResolutionData),
		ResolvedBy: optional(a.ResolvedBy), ResolvedAt: optInt(a.ResolvedAt), CreatedAt: optInt(a.CreatedAt), UpdatedAt: optInt(a.UpdatedAt),
		RunStatus: optional(a.RunStatus)}
}

var approvalPageRules = pageRules{DefaultLimit: 100}

// listApprovals is GET /approvals: the review queue in the caller's scope
// (status=pending for what waits), filtered by status, source_type,
// approval_type, pause_type, agent_id, team_id, workflow_id, user_id and
// run_id, newest first.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) error {
	start := time.Now()
	d, err := s.database(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	pq, err := parsePageQuery(q, approvalPageRules)
	if err != nil {
		return err
	}
	switch st := q.Get("status"); st {
	case "", db.ApprovalPending, db.ApprovalApproved, db.ApprovalRejected, db.ApprovalExpired, db.ApprovalCancelled:
	default:
		return errorf(http.StatusUnprocessableEntity, "status %q: use pending, approved, rejected, expired or cancelled", st)
	}
	list, total, err := d.ListApprovals(r.Context(), db.ApprovalFilter{Status: q.Get("status"), SourceType: q.Get("source_type"),
		ApprovalType: q.Get("approval_type"), PauseType: q.Get("pause_type"), AgentID: q.Get("agent_id"), TeamID: q.Get("team_id"),
		WorkflowID: q.Get("workflow_id"), UserID: actAs(r.Context(), q.Get("user_id")).id, RunID: q.Get("run_id"), Limit: pq.Limit, Page: pq.Page})
	if err = s.leaveOutCorrupt(r.Context(), "list approvals", err); err != nil {
		return err
	}
	views := make([]approvalView, 0, len(list))
	for i := range list {
		views = append(views, newApprovalView(&list[i]))
	}
	writePage(w, views, pq, total, time.Since(start))
	return nil
}

func (s *Server) loadApproval(r *http.Request) (*db.DB, *db.Approval, error) {
	d, err := s.database(r)
	if err != nil {
		return nil, nil, err
	}
	id := chi.URLParam(r, "approval_id")
	a, err := d.GetApproval(r.Context(), id)
	if errors.Is(err, db.ErrNotFound) || err == nil && !actAs(r.Context(), "").owns(a.UserID) {
		return nil, nil, errorf(http.StatusNotFound, "Approval %s not found", id)
	}
	return d, a, err
}

// getApproval is GET /approvals/{approval_id}.
func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) error {
	_, a, err := s.loadApproval(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, newApprovalView(a))
	return nil
}

// approvalResolve is AgentOS's ApprovalResolve body.
type approvalResolve struct {
	Status         string          `json:"status"`
	ResolvedBy     *string         `json:"resolved_by"`
	ResolutionData json.RawMessage `json:"resolution_data"`
}

// resolveApproval is POST /approvals/{approval_id}/resolve: a pending
// approval becomes approved or rejected (once: 409 after). A paused agent
// or team run waiting only for confirmations is continued with the
// decision (continueFromApproval), and so is a paused workflow run once
// every approval it waits for is resolved (continueWorkflowFromApproval);
// other paused runs through their continue route.
func (s *Server) resolveApproval(w http.ResponseWriter, r *http.Request) error {
	d, a, err := s.loadApproval(r)
	if err != nil {
		return err
	}
	var body approvalResolve
	if err := decodeJSONBody(r, &body); err != nil {
		return err
	}
	if body.Status != db.ApprovalApproved && body.Status != db.ApprovalRejected {
		return errorf(http.StatusUnprocessableEntity, "status must be approved or rejected")
	}
	if len(body.ResolutionData) > 0 && string(body.ResolutionData) != "null" && body.ResolutionData[0] != '{' {
		return errorf(http.StatusUnprocessableEntity, "resolution_data must be an object")
	}
	if string(body.ResolutionData) == "null" {
		body.ResolutionData = nil
	}
	// Who resolved it: the caller's own identity (a scoped user cannot sign
	// as another; an admin or key holder may name the person).
	by := actAs(r.Context(), "").id
	if p, ok := auth.FromContext(r.Context()); ok && p.UserID != "" {
		by = p.UserID
	}
	if _, scoped := db.UserScope(r.Context()); !scoped && body.ResolvedBy != nil && *body.ResolvedBy != "" {
		if len(*body.ResolvedBy) > 255 {
			return errorf(http.StatusUnprocessableEntity, "resolved_by is at most 255 characters")
		}
		by = *body.ResolvedBy
	}
	out, err := d.ResolveApproval(r.Context(), a.ID, body.Status, by, body.ResolutionData)
	switch {
	case errors.Is(err, db.ErrApprovalResolved):
		return &httpError{Status: http.StatusConflict, Detail: "Approval " + a.ID + " is no longer pending", Err: err}
	case errors.Is(err, db.ErrNotFound):
		return errorf(http.StatusNotFound, "Approval %s not found", a.ID)
	case err != nil:
		return err
	}
	out = s.continueFromApproval(r.Context(), d, out)
	writeJSON(w, http.StatusOK, newApprovalView(out))
	return nil
}

// continueFromApproval continues the PAUSED agent or team run whose
// approval a was just resolved: approved confirms, rejected rejects, each
// of its tool calls waiting for a confirmation (with the resolution_data's
// note, if any), and the run goes on. A pause that waits for user input or
// an external result is left to the continue route, which takes the
// answers; so is a run that is continuing already. It returns the approval
// as it is afterwards (its run_status follows the run).
func (s *Server) continueFromApproval(ctx context.Context, d *db.DB, a *db.Approval) *db.Approval {
	var t runContinuer
	switch {
	case a.SourceType == string(run.TypeWorkflow) && s.workflows[a.WorkflowID] != nil:
		return s.continueWorkflowFromApproval(ctx, d, s.workflows[a.WorkflowID], a)
	case a.SourceType == string(run.TypeAgent) && s.agents[a.AgentID] != nil:
		t = s.agents[a.AgentID]
	case a.SourceType == string(run.TypeTeam) && s.teams[a.TeamID] != nil:
		t = s.teams[a.TeamID]
	default:
		return a
	}
	if a.RunStatus != string(run.StatusPaused) || t.DB() == nil {
		return a
	}
	ctx, f, err := s.runs.beginAfterFlight(ctx, a.RunID, t.Component(), a.UserID, cancelWait)
	if err != nil {
		return a
	}
	defer s.runs.end(a.RunID, f)
	row, err := t.DB().GetRun(ctx, a.RunID)
	if err != nil || row.Status != run.StatusPaused {
		return a
	}
	paused, err := row.Output()
	if err != nil || !agent.IsPauseApproval(paused, a.ID) {
		return a
	}
	confirmed := a.Status == db.ApprovalApproved
	var note struct {
		Note string `json:"note"`
	}
	_ = json.Unmarshal(a.ResolutionData, &note)
	for i := range paused.Requirements {
		te := paused.Requirements[i].ToolExecution
		if te == nil || !te.RequiresConfirmation || te.RequiresUserInput || te.ExternalExecutionRequired {
			return a
		}
		te.Confirmed, te.ConfirmationNote = &confirmed, note.Note
	}
	hctx, release, err := s.leaseContinue(context.WithoutCancel(ctx), t.DB(), row)
	if err != nil {
		// Continued by another request meanwhile (409: that continue
		// takes the run on), or the lease could not be written.
		s.log.Warn("agentos: continuing a run after its approval was resolved", "run_id", a.RunID, "approval_id", a.ID, "err", err)
		return a
	}
	_, err = t.ContinueRun(hctx, paused)
	release()
	if err != nil {
		s.log.Warn("agentos: continuing a run after its approval was resolved", "run_id", a.RunID, "approval_id", a.ID, "err", err)
	}
	if now, err := d.GetApproval(ctx, a.ID); err == nil {
		return now
	}
	return a
}

// continueWorkflowFromApproval continues the PAUSED workflow run whose
// approval a was just resolved, when its approvals now answer every step
// requirement (workflow.ApprovalAnswers: confirmations, output reviews as
// they are, agent or team steps waiting for tool confirmations). A run that
// waits for another approval, for user input or a route, or that is
// continuing already, is left as it is. It returns the approval as it is
// afterwards.
func (s *Server) continueWorkflowFromApproval(ctx context.Context, d *db.DB, wf *workflow.Workflow, a *db.Approval) *db.Approval {
	if a.RunStatus != string(run.StatusPaused) || wf.DB() == nil {
		return a
	}
	ctx, f, err := s.runs.beginAfterFlight(ctx, a.RunID, wf.Component(), a.UserID, cancelWait)
	if err != nil {
		return a
	}
	defer s.runs.end(a.RunID, f)
	answers, ready, err := wf.ApprovalAnswers(ctx, a.RunID)
	if err != nil || !ready {
		return a
	}
	row, err := wf.DB().GetRun(ctx, a.RunID)
	if err != nil || row.Status != run.StatusPaused {
		return a
	}
	hctx, release, err := s.leaseContinue(context.WithoutCancel(ctx), wf.DB(), row)
	if err != nil {
		s.log.Warn("agentos: continuing a workflow run after its approval was resolved", "run_id", a.RunID, "approval_id", a.ID, "err", err)
		return a
	}
	_, err = wf.ContinueRun(hctx, a.RunID, answers)
	release()
	if err != nil {
		s.log.Warn("agentos: continuing a workflow run after its approval was resolved", "run_id", a.RunID, "approval_id", a.ID, "err", err)
	}
	if now, err := d.GetApproval(ctx, a.ID); err == nil {
		return now
	}
	return a
}

// approvalCount is AgentOS 3.0's ApprovalCountResponse.
type approvalCount struct {
	Count int `json:"count"`
}

// countApprovals is GET /approvals/count: how many approvals are pending in
// the caller's scope (a scoped user counts their own; others may filter
// with user_id).
func (s *Server) countApprovals(w http.ResponseWriter, r *http.Request) error {
	d, err := s.database(r)
	if err != nil {
		return err
	}
	_, total, err := d.ListApprovals(r.Context(), db.ApprovalFilter{Status: db.ApprovalPending,
		UserID: actAs(r.Context(), r.URL.Query().Get("user_id")).id, Limit: 1, Page: 1})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, approvalCount{Count: total})
	return nil
}
