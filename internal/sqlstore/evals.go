package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/db"
)

const evalCols = "run_id, eval_type, eval_data, eval_input, name, agent_id, team_id, workflow_id, model_id, model_provider, " +
	"evaluated_component_name, created_at, updated_at, user_id"

var _ db.EvalDriver = (*Store)(nil)

func (s *Store) evals() string { return s.d.Table(s.t.Evals) }

// CreateEvalRun inserts an eval run; a taken run_id is db.ErrExists.
func (s *Store) CreateEvalRun(ctx context.Context, e *db.EvalRun) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	inserted, err := s.d.Inserted(s.w.ExecContext(ctx, s.d.Bind(s.d.InsertIgnore(s.evals(), splitCols(evalCols), "run_id")),
		e.RunID, e.EvalType, s.jsonText(e.EvalData), s.jsonArg(e.EvalInput), s.nullText(e.Name), nullStr(e.AgentID), nullStr(e.TeamID),
		nullStr(e.WorkflowID), nullStr(e.ModelID), nullStr(e.ModelProvider), s.nullText(e.EvaluatedComponentName),
		e.CreatedAt, e.UpdatedAt, nullStr(e.UserID)))
	if err != nil {
		return s.fail("create eval run "+e.RunID, err)
	}
	if !inserted {
		return fmt.Errorf("%w: eval run %s", db.ErrExists, e.RunID)
	}
	return nil
}

// GetEvalRun returns an eval run in scope or db.ErrNotFound.
func (s *Store) GetEvalRun(ctx context.Context, runID string) (*db.EvalRun, error) {
	w := &where{}
	w.add("run_id = ?", runID)
	s.scope(ctx, w)
	e, err := scanEvalRun(s.r.QueryRowContext(ctx, s.d.Bind("SELECT "+evalCols+" FROM "+s.evals()+w.String()), w.args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: eval run %s", db.ErrNotFound, runID)
	}
	if err != nil {
		return nil, s.fail("get eval run "+runID, err)
	}
	return e, nil
}

// ListEvalRuns returns one page of eval runs in scope and the total count;
// an undecodable row is left out and reported as in ListSessions.
func (s *Store) ListEvalRuns(ctx context.Context, f db.EvalFilter) ([]db.EvalRun, int, error) {
	w := &where{}
	w.eq("agent_id", f.AgentID)
	w.eq("team_id", f.TeamID)
	w.eq("workflow_id", f.WorkflowID)
	w.eq("model_id", f.ModelID)
	s.userEq(w, "user_id", f.UserID)
	if len(f.EvalTypes) > 0 {
		w.add("eval_type IN ("+placeholders(len(f.EvalTypes))+")", anys(f.EvalTypes)...)
	}
	switch f.ComponentType {
	case "agent":
		w.add("agent_id IS NOT NULL")
	case "team":
		w.add("team_id IS NOT NULL")
	case "workflow":
		w.add("workflow_id IS NOT NULL")
	}
	s.scope(ctx, w)
	var total int
	if err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(*) FROM "+s.evals()+w.String()), w.args...).Scan(&total); err != nil {
		return nil, 0, s.fail("count eval runs", err)
	}
	d := dir(f.SortOrder)
	q := fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s %s, run_id %s LIMIT %d OFFSET %d", evalCols, s.evals(), w.String(),
		sortCol(f.SortBy, "created_at", "created_at", "updated_at"), d, d, f.Limit, offset(f.Limit, f.Page))
	rows, err := s.r.QueryContext(ctx, s.d.Bind(q), w.args...)
	if err != nil {
		return nil, 0, s.fail("list eval runs", err)
	}
	defer rows.Close()
	out, corrupt, err := decodeRows(rows, []db.EvalRun{}, scanEvalRun)
	if err != nil {
		return nil, 0, s.fail("list eval runs", err)
	}
	return out, total, corrupt
}

// RenameEvalRun renames an eval run in scope.
func (s *Store) RenameEvalRun(ctx context.Context, runID, name string, updatedAt int64) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	w := &where{}
	w.add("run_id = ?", runID)
	s.scope(ctx, w)
	res, err := s.w.ExecContext(ctx, s.d.Bind("UPDATE "+s.evals()+" SET name = ?, updated_at = ?"+w.String()), append([]any{s.text(name), updatedAt}, w.args...)...)
	if err != nil {
		return s.fail("rename eval run "+runID, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		// No row in scope matched (MySQL's connections count found rows,
		// as the other backends count matched ones): the read reports it.
		if _, err := s.GetEvalRun(ctx, runID); err != nil {
			return err
		}
	}
	return nil
}

// DeleteEvalRuns deletes eval runs in scope; missing ids are ignored.
func (s *Store) DeleteEvalRuns(ctx context.Context, runIDs ...string) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	for chunk := range chunks(runIDs, 500) {
		w := &where{}
		w.add("run_id IN ("+placeholders(len(chunk))+")", anys(chunk)...)
		s.scope(ctx, w)
		if _, err := s.w.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.evals()+w.String()), w.args...); err != nil {
			return s.fail("delete eval runs", err)
		}
	}
	return nil
}

func scanEvalRun(sc scanner) (*db.EvalRun, error) {
	var (
		e                                                               db.EvalRun
		data, input                                                     []byte
		name, agent, team, workflow, modelID, provider, component, user sql.NullString
		updated                                                         looseNull
	)
	if err := sc.Scan(&e.RunID, &e.EvalType, &data, &input, &name, &agent, &team, &workflow, &modelID, &provider, &component,
		intCol{&e.CreatedAt}, &updated, &user); err != nil {
		return nil, undecodable("evals", e.RunID, err)
	}
	var err error
	if e.EvalData, err = decodeJSON(data); err != nil {
		return nil, &db.CorruptRowError{Table: "evals", ID: e.RunID, Err: fmt.Errorf("eval_data: %w", err)}
	}
	if e.EvalInput, err = decodeJSON(input); err != nil {
		return nil, &db.CorruptRowError{Table: "evals", ID: e.RunID, Err: fmt.Errorf("eval_input: %w", err)}
	}
	e.Name, e.AgentID, e.TeamID, e.WorkflowID = name.String, agent.String, team.String, workflow.String
	e.ModelID, e.ModelProvider, e.EvaluatedComponentName, e.UserID = modelID.String, provider.String, component.String, user.String
	e.UpdatedAt = updated.Int64
	return &e, nil
}
