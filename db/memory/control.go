package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/agentryhq/agentry/db"
)

// control holds the control-plane tables; the maps are made on first write
// and guarded by the driver's lock.
type control struct {
	evals map[string]*db.EvalRun
}

var _ db.EvalDriver = (*Driver)(nil)

func cloneEvalRun(e *db.EvalRun) *db.EvalRun {
	cp := *e
	cp.EvalData = bytes.Clone(e.EvalData)
	cp.EvalInput = bytes.Clone(e.EvalInput)
	return &cp
}

// CreateEvalRun inserts an eval run; a taken run_id is db.ErrExists.
func (d *Driver) CreateEvalRun(ctx context.Context, e *db.EvalRun) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if d.control.evals == nil {
		d.control.evals = map[string]*db.EvalRun{}
	}
	if _, ok := d.control.evals[e.RunID]; ok {
		return fmt.Errorf("%w: eval run %s", db.ErrExists, e.RunID)
	}
	d.control.evals[e.RunID] = cloneEvalRun(e)
	return nil
}

// GetEvalRun returns an eval run in scope or db.ErrNotFound.
func (d *Driver) GetEvalRun(ctx context.Context, runID string) (*db.EvalRun, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	e, ok := d.control.evals[runID]
	if !ok || !visible(ctx, e.UserID) {
		return nil, fmt.Errorf("%w: eval run %s", db.ErrNotFound, runID)
	}
	return cloneEvalRun(e), nil
}

// ListEvalRuns returns one page of eval runs in scope and the total count.
func (d *Driver) ListEvalRuns(ctx context.Context, f db.EvalFilter) ([]db.EvalRun, int, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	var match []*db.EvalRun
	for _, e := range d.control.evals {
		switch {
		case !visible(ctx, e.UserID),
			f.UserID != "" && e.UserID != f.UserID,
			f.AgentID != "" && e.AgentID != f.AgentID,
			f.TeamID != "" && e.TeamID != f.TeamID,
			f.WorkflowID != "" && e.WorkflowID != f.WorkflowID,
			f.ModelID != "" && e.ModelID != f.ModelID,
			len(f.EvalTypes) > 0 && !slices.Contains(f.EvalTypes, e.EvalType),
			f.ComponentType == "agent" && e.AgentID == "",
			f.ComponentType == "team" && e.TeamID == "",
			f.ComponentType == "workflow" && e.WorkflowID == "":
			continue
		}
		match = append(match, e)
	}
	slices.SortFunc(match, func(a, b *db.EvalRun) int {
		ka, kb := a.CreatedAt, b.CreatedAt
		if f.SortBy == "updated_at" {
			ka, kb = a.UpdatedAt, b.UpdatedAt
		}
		c := cmp.Or(cmp.Compare(ka, kb), cmp.Compare(a.RunID, b.RunID))
		if f.SortOrder == db.Desc {
			c = -c
		}
		return c
	})
	out := []db.EvalRun{}
	for _, e := range page(match, f.Limit, f.Page) {
		out = append(out, *cloneEvalRun(e))
	}
	return out, len(match), nil
}

// RenameEvalRun renames an eval run in scope.
func (d *Driver) RenameEvalRun(ctx context.Context, runID, name string, updatedAt int64) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	e, ok := d.control.evals[runID]
	if !ok || !visible(ctx, e.UserID) {
		return fmt.Errorf("%w: eval run %s", db.ErrNotFound, runID)
	}
	e.Name, e.UpdatedAt = name, updatedAt
	return nil
}

// DeleteEvalRuns deletes eval runs in scope; missing ids are ignored.
func (d *Driver) DeleteEvalRuns(ctx context.Context, runIDs ...string) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	for _, id := range runIDs {
		if e, ok := d.control.evals[id]; ok && visible(ctx, e.UserID) {
			delete(d.control.evals, id)
		}
	}
	return nil
}
