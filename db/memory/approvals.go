package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/agentryhq/agentry/db"
)

// CreateApproval inserts a row; an existing id is left alone.
func (d *Driver) CreateApproval(ctx context.Context, a *db.Approval) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if _, ok := d.approvals[a.ID]; ok {
		return nil
	}
	cp := *a
	d.approvals[a.ID] = &cp
	return nil
}

// GetApproval returns a row in scope or db.ErrNotFound.
func (d *Driver) GetApproval(ctx context.Context, id string) (*db.Approval, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	a, ok := d.approvals[id]
	if !ok || !visible(ctx, a.UserID) {
		return nil, fmt.Errorf("%w: approval %s", db.ErrNotFound, id)
	}
	cp := *a
	return &cp, nil
}

// ListApprovals pages rows in scope, newest first.
func (d *Driver) ListApprovals(ctx context.Context, f db.ApprovalFilter) ([]db.Approval, int, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	var all []db.Approval
	match := func(want, got string) bool { return want == "" || want == got }
	for _, a := range d.approvals {
		if visible(ctx, a.UserID) && match(f.Status, a.Status) && match(f.SourceType, a.SourceType) && match(f.ApprovalType, a.ApprovalType) &&
			match(f.PauseType, a.PauseType) && match(f.AgentID, a.AgentID) && match(f.TeamID, a.TeamID) && match(f.WorkflowID, a.WorkflowID) &&
			match(f.UserID, a.UserID) && match(f.RunID, a.RunID) {
			all = append(all, *a)
		}
	}
	slices.SortFunc(all, func(x, y db.Approval) int {
		return cmp.Or(cmp.Compare(y.CreatedAt, x.CreatedAt), cmp.Compare(y.ID, x.ID))
	})
	start := min((f.Page-1)*f.Limit, len(all))
	end := min(start+f.Limit, len(all))
	return all[start:end], len(all), nil
}

// ResolveApproval moves a pending row in scope to status.
func (d *Driver) ResolveApproval(ctx context.Context, id, status, resolvedBy string, data json.RawMessage, at int64) (*db.Approval, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	a, ok := d.approvals[id]
	if !ok || !visible(ctx, a.UserID) {
		return nil, fmt.Errorf("%w: approval %s", db.ErrNotFound, id)
	}
	if a.Status != db.ApprovalPending {
		return nil, fmt.Errorf("%w: approval %s is %s", db.ErrApprovalResolved, id, a.Status)
	}
	a.Status, a.ResolvedBy, a.ResolutionData, a.ResolvedAt, a.UpdatedAt = status, resolvedBy, data, at, at
	cp := *a
	return &cp, nil
}

// SetApprovalsRunStatus records a run's status on its approvals in scope.
func (d *Driver) SetApprovalsRunStatus(ctx context.Context, runID, runStatus string, at int64) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	for _, a := range d.approvals {
		if a.RunID != runID || !visible(ctx, a.UserID) {
			continue
		}
		a.RunStatus, a.UpdatedAt = runStatus, at
		if terminal(runStatus) && a.Status == db.ApprovalPending {
			a.Status = db.ApprovalExpired
		}
	}
	return nil
}

// terminal reports a run status after which nobody can answer an approval.
func terminal(status string) bool {
	return status == "COMPLETED" || status == "ERROR" || status == "CANCELLED"
}
