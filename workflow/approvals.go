package workflow

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// A paused run's requirements are also rows of the review queue
// (agno_approvals, Agno 3.0's approvals), one per requirement: listed by
// GET /approvals, resolved there or answered by continuing the run.

// approvalID names the approval of a requirement, a name-based UUID of
// approvalKey; a retried output review is a new approval.
func approvalID(runID string, r run.StepRequirement) string {
	return db.ApprovalKeyID(approvalKey(runID, r))
}

// approvalKey is what approvalID is derived from, and the id earlier
// versions stored ("run:step#executor:0" had a '#' that URLs cut off).
func approvalKey(runID string, r run.StepRequirement) string {
	return fmt.Sprintf("%s:%s:%d", runID, reqKey(r), r.RetryCount)
}

// getApproval reads the approval of a requirement under its UUID, or under
// the id an earlier version stored it as.
func getApproval(ctx context.Context, d *db.DB, runID string, r run.StepRequirement) (*db.Approval, error) {
	a, err := d.GetApproval(ctx, approvalID(runID, r))
	if errors.Is(err, db.ErrNotFound) {
		a, err = d.GetApproval(ctx, approvalKey(runID, r))
	}
	return a, err
}

// resolveApproval resolves the approval of a requirement under its UUID,
// or under the id an earlier version stored it as.
func resolveApproval(ctx context.Context, d *db.DB, runID string, r run.StepRequirement, status, by string, data json.RawMessage) error {
	_, err := d.ResolveApproval(ctx, approvalID(runID, r), status, by, data)
	if errors.Is(err, db.ErrNotFound) {
		_, err = d.ResolveApproval(ctx, approvalKey(runID, r), status, by, data)
	}
	return err
}

func pauseType(r run.StepRequirement) string {
	switch {
	case r.RequiresRouteSelection:
		return "route_selection"
	case r.RequiresOutputReview:
		return "output_review"
	case r.RequiresUserInput:
		return "user_input"
	}
	return "confirmation"
}

// queueApprovals stores the pending approvals of a paused run.
func (w *Workflow) queueApprovals(ctx context.Context, out *run.Output) error {
	d := w.cfg.DB
	if d == nil {
		return nil
	}
	var errs []error
	for _, r := range out.StepRequirements {
		reqs, _ := json.Marshal([]run.StepRequirement{r})
		msg := cmp.Or(r.ConfirmationMessage, r.UserInputMessage, r.OutputReviewMessage)
		c, _ := json.Marshal(map[string]any{"step_id": r.StepID, "step_name": r.StepName, "step_type": r.StepType, "message": msg})
		a := &db.Approval{ID: approvalID(out.RunID, r), RunID: out.RunID, SessionID: out.SessionID, Status: db.ApprovalPending,
			SourceType: string(run.TypeWorkflow), ApprovalType: "required", PauseType: pauseType(r), WorkflowID: w.cfg.ID, UserID: out.UserID,
			SourceName: cmp.Or(w.cfg.Name, w.cfg.ID), Requirements: reqs, Context: c, RunStatus: string(run.StatusPaused)}
		if at, ok := earliestTimeout([]run.StepRequirement{r}); ok {
			a.ExpiresAt = at.Unix()
		}
		errs = append(errs, d.CreateApproval(ctx, a))
	}
	return errors.Join(errs...)
}

// settleApprovals records the answers given by continuing the run on its
// pending approvals (an approval resolved through /approvals keeps its
// resolution).
func (w *Workflow) settleApprovals(ctx context.Context, runID, user string, answered []run.StepRequirement) {
	d := w.cfg.DB
	if d == nil {
		return
	}
	for _, r := range answered {
		status := db.ApprovalApproved
		if (r.Confirmed != nil && !*r.Confirmed) || allToolsRejected(r) {
			status = db.ApprovalRejected
		}
		var data json.RawMessage
		if r.RejectionFeedback != "" {
			data, _ = json.Marshal(map[string]string{"rejection_feedback": r.RejectionFeedback})
		}
		err := resolveApproval(ctx, d, runID, r, status, user, data)
		if err != nil && !errors.Is(err, db.ErrApprovalResolved) && !errors.Is(err, db.ErrNotFound) {
			slog.Warn("workflow: recording the answer on its approval failed", "run_id", runID, "step_id", r.StepID, "error", err)
		}
	}
}

// allToolsRejected reports whether r answers an executor pause by rejecting
// every tool call it waited on (as an agent's own approval is rejected).
func allToolsRejected(r run.StepRequirement) bool {
	if !r.RequiresExecutorInput || len(r.ExecutorRequirements) == 0 {
		return false
	}
	for _, e := range r.ExecutorRequirements {
		if te := e.ToolExecution; te == nil || te.Confirmed == nil || *te.Confirmed {
			return false
		}
	}
	return true
}

// approvalsFollow records the run's status on its approvals.
func (w *Workflow) approvalsFollow(ctx context.Context, runID string, status run.Status) {
	if w.cfg.DB == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := w.cfg.DB.SetApprovalsRunStatus(ctx, runID, string(status)); err != nil {
		slog.Warn("workflow: recording the run status on its approvals failed", "run_id", runID, "error", err)
	}
}

// ApprovalAnswers returns the answers that the resolved approvals of the
// paused run runID give, for ContinueRun: approved confirms and rejected
// rejects (the resolution's rejection_feedback or note becomes the
// rejection feedback) a step confirmation, an output review taken as it
// is, or an agent or team step whose tools wait only for confirmations
// (each tool confirmed or rejected). ready is false while an approval of the
// run is still pending, or when a requirement needs more than a decision
// (user input, a route, an external result, a failed step's decision): the
// continue route takes those answers.
func (w *Workflow) ApprovalAnswers(ctx context.Context, runID string) (answers []run.StepRequirement, ready bool, err error) {
	out, j, err := w.loadPaused(ctx, runID)
	if err != nil {
		return nil, false, err
	}
	if len(out.ErrorRequirements) > 0 || len(out.StepRequirements) == 0 {
		return nil, false, nil
	}
	for _, r := range out.StepRequirements {
		if timedOut(r, j) {
			continue // its approval expired; ContinueRun keeps its OnTimeout
		}
		if !decisionOnly(r) {
			return nil, false, nil
		}
		a, err := getApproval(ctx, w.cfg.DB, runID, r)
		if errors.Is(err, db.ErrNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if a.Status != db.ApprovalApproved && a.Status != db.ApprovalRejected {
			return nil, false, nil
		}
		ok := a.Status == db.ApprovalApproved
		var note struct {
			RejectionFeedback string `json:"rejection_feedback"`
			Note              string `json:"note"`
		}
		_ = json.Unmarshal(a.ResolutionData, &note)
		ans := r
		ans.ExecutorRequirements = slices.Clone(r.ExecutorRequirements)
		if r.RequiresExecutorInput {
			for k := range ans.ExecutorRequirements {
				te := *ans.ExecutorRequirements[k].ToolExecution
				te.Confirmed, te.ConfirmationNote = ptr(ok), note.Note
				ans.ExecutorRequirements[k].ToolExecution = &te
			}
		}
		ans.Confirmed = ptr(ok)
		if !ok {
			ans.RejectionFeedback = cmp.Or(note.RejectionFeedback, note.Note)
		}
		answers = append(answers, ans)
	}
	return answers, true, nil
}

// decisionOnly tells whether approving or rejecting answers r whole.
func decisionOnly(r run.StepRequirement) bool {
	switch {
	case r.RequiresUserInput, r.RequiresRouteSelection:
		return false
	case r.RequiresExecutorInput:
		for _, q := range r.ExecutorRequirements {
			te := q.ToolExecution
			if te == nil || !te.RequiresConfirmation || te.RequiresUserInput || te.ExternalExecutionRequired {
				return false
			}
		}
		return len(r.ExecutorRequirements) > 0
	}
	return r.RequiresConfirmation || r.RequiresOutputReview
}
