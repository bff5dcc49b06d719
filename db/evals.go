package db

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// EvalRun is one row of agno_eval_runs, keyed by run_id (Agno 3.0 renamed
// eval_id). EvalData and EvalInput are the JSON objects Agno's eval classes
// write (eval/doc.go names their shapes). An eval run without a user
// (UserID "") is visible only to unscoped callers, as in Agno.
type EvalRun struct {
	RunID                  string
	EvalType               string
	EvalData               json.RawMessage
	EvalInput              json.RawMessage
	Name                   string
	AgentID                string
	TeamID                 string
	WorkflowID             string
	ModelID                string
	ModelProvider          string
	EvaluatedComponentName string
	UserID                 string
	CreatedAt, UpdatedAt   int64
}

// EvalTypes are the eval_type values Agno 3.0 knows.
var EvalTypes = []string{"accuracy", "agent_as_judge", "performance", "reliability"}

// EvalFilter selects eval runs. Limit is required; Page starts at 1. Empty
// fields do not filter.
type EvalFilter struct {
	AgentID, TeamID, WorkflowID, ModelID string
	// EvalTypes keeps runs of any of these types.
	EvalTypes []string
	// ComponentType "agent", "team" or "workflow" keeps runs whose
	// agent_id, team_id or workflow_id is set (Agno's filter_type).
	ComponentType string
	UserID        string
	Limit, Page   int
	// SortBy is "created_at" (default) or "updated_at"; default order desc.
	SortBy, SortOrder string
}

// EvalSortColumns are the columns ListEvalRuns may sort by.
var EvalSortColumns = []string{"created_at", "updated_at"}

// EvalDriver stores eval runs. Reads, renames and deletes apply the
// context's user scope inside their queries.
type EvalDriver interface {
	// CreateEvalRun inserts a run; an existing run_id is ErrExists.
	CreateEvalRun(ctx context.Context, e *EvalRun) error
	GetEvalRun(ctx context.Context, runID string) (*EvalRun, error)
	ListEvalRuns(ctx context.Context, f EvalFilter) ([]EvalRun, int, error)
	// RenameEvalRun sets name and updated_at; ErrNotFound when not in scope.
	RenameEvalRun(ctx context.Context, runID, name string, updatedAt int64) error
	// DeleteEvalRuns deletes runs in scope; missing ids are ignored.
	DeleteEvalRuns(ctx context.Context, runIDs ...string) error
}

// evalDriver returns the driver's EvalDriver ability.
func (d *DB) evalDriver() (EvalDriver, error) {
	e, ok := d.driver.(EvalDriver)
	if !ok {
		return nil, fmt.Errorf("%w: the %s driver does not store eval runs", ErrUnsupportedDriver, d.driver.Dialect())
	}
	return e, nil
}

// CreateEvalRun validates and stores an eval run; a scoped caller stores it
// as itself.
func (d *DB) CreateEvalRun(ctx context.Context, e *EvalRun) (*EvalRun, error) {
	switch {
	case e == nil || e.RunID == "":
		return nil, fmt.Errorf("%w: run_id is required", ErrInvalidRecord)
	case !slices.Contains(EvalTypes, e.EvalType):
		return nil, fmt.Errorf("%w: eval_type %q is not one of %s", ErrInvalidRecord, e.EvalType, strings.Join(EvalTypes, ", "))
	case len(e.EvalData) == 0 || !json.Valid(e.EvalData):
		return nil, fmt.Errorf("%w: eval_data of eval run %s must be JSON", ErrInvalidRecord, e.RunID)
	case len(e.EvalInput) > 0 && !json.Valid(e.EvalInput):
		return nil, fmt.Errorf("%w: eval_input of eval run %s must be JSON", ErrInvalidRecord, e.RunID)
	}
	ed, err := d.evalDriver()
	if err != nil {
		return nil, err
	}
	cp := *e
	d.prepareWrite(ctx, &cp.UserID, &cp.CreatedAt, &cp.UpdatedAt)
	if err := checkUserID("eval run", cp.RunID, cp.UserID); err != nil {
		return nil, err
	}
	bctx, call := d.bound(ctx)
	if err := call.done(ed.CreateEvalRun(bctx, &cp)); err != nil {
		return nil, err
	}
	return &cp, nil
}

// GetEvalRun returns an eval run in scope or ErrNotFound.
func (d *DB) GetEvalRun(ctx context.Context, runID string) (*EvalRun, error) {
	ed, err := d.evalDriver()
	if err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := ed.GetEvalRun(ctx, runID)
	return out, call.done(err)
}

// ListEvalRuns validates the filter and returns a page and the total count.
func (d *DB) ListEvalRuns(ctx context.Context, f EvalFilter) ([]EvalRun, int, error) {
	if err := checkPage(f.Limit, f.Page, &f.SortBy, &f.SortOrder, EvalSortColumns, Desc); err != nil {
		return nil, 0, err
	}
	for _, t := range f.EvalTypes {
		if !slices.Contains(EvalTypes, t) {
			return nil, 0, fmt.Errorf("%w: eval type %q is not one of %s", ErrInvalidFilter, t, strings.Join(EvalTypes, ", "))
		}
	}
	switch f.ComponentType {
	case "", "agent", "team", "workflow":
	default:
		return nil, 0, fmt.Errorf("%w: component type %q is not agent, team or workflow", ErrInvalidFilter, f.ComponentType)
	}
	ed, err := d.evalDriver()
	if err != nil {
		return nil, 0, err
	}
	scopeUser(ctx, &f.UserID)
	ctx, call := d.bound(ctx)
	out, n, err := ed.ListEvalRuns(ctx, f)
	return out, n, call.done(err)
}

// RenameEvalRun renames an eval run in scope and returns it.
func (d *DB) RenameEvalRun(ctx context.Context, runID, name string) (*EvalRun, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: an eval run's name cannot be empty", ErrInvalidRecord)
	}
	ed, err := d.evalDriver()
	if err != nil {
		return nil, err
	}
	bctx, call := d.bound(ctx)
	if err := call.done(ed.RenameEvalRun(bctx, runID, name, d.now().Unix())); err != nil {
		return nil, err
	}
	return d.GetEvalRun(ctx, runID)
}

// DeleteEvalRuns deletes eval runs in scope; missing ids are ignored.
func (d *DB) DeleteEvalRuns(ctx context.Context, runIDs ...string) error {
	if len(runIDs) == 0 {
		return nil
	}
	ed, err := d.evalDriver()
	if err != nil {
		return err
	}
	ctx, call := d.bound(ctx)
	return call.done(ed.DeleteEvalRuns(ctx, runIDs...))
}
