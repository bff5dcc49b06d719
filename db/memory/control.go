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
	// metrics is keyed by user_id, date and aggregation_period.
	metrics map[[3]string]*db.DailyMetrics
	// schedules and scheduleRuns are agno_schedules and agno_schedule_runs.
	schedules    map[string]*db.Schedule
	scheduleRuns map[string]*db.ScheduleRun
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
	return insertNew(&d.control.evals, e.RunID, cloneEvalRun(e), "eval run")
}

// GetEvalRun returns an eval run in scope or db.ErrNotFound.
func (d *Driver) GetEvalRun(ctx context.Context, runID string) (*db.EvalRun, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return getVisible(ctx, d.control.evals, runID, "eval run", func(e *db.EvalRun) string { return e.UserID }, cloneEvalRun)
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

var _ db.MetricsDriver = (*Driver)(nil)

// RunsCreatedIn pages runs created in [from, to) in (created_at, run_id) order.
func (d *Driver) RunsCreatedIn(ctx context.Context, from, to int64, after db.RunCursor, limit int) ([]db.Run, *db.RunCursor, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	var match []*db.Run
	for _, r := range d.runs {
		if r.CreatedAt >= from && r.CreatedAt < to &&
			(r.CreatedAt > after.CreatedAt || (r.CreatedAt == after.CreatedAt && r.RunID > after.RunID)) {
			match = append(match, r)
		}
	}
	slices.SortFunc(match, func(a, b *db.Run) int {
		return cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.RunID, b.RunID))
	})
	out := make([]db.Run, 0, min(limit, len(match)))
	for _, r := range match[:min(limit, len(match))] {
		out = append(out, viewRunValue(r))
	}
	if len(out) < limit {
		return out, nil, nil
	}
	last := out[len(out)-1]
	return out, &db.RunCursor{CreatedAt: last.CreatedAt, RunID: last.RunID}, nil
}

// SessionCountsIn counts sessions created in [from, to) by user and type.
func (d *Driver) SessionCountsIn(ctx context.Context, from, to int64) ([]db.SessionCount, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	counts := map[db.SessionCount]int64{}
	for _, s := range d.sessions {
		if s.CreatedAt >= from && s.CreatedAt < to {
			counts[db.SessionCount{UserID: s.UserID, SessionType: s.SessionType}]++
		}
	}
	out := make([]db.SessionCount, 0, len(counts))
	for k, n := range counts {
		k.Count = n
		out = append(out, k)
	}
	return out, nil
}

// FirstRunCreatedAt is the oldest run's created_at.
func (d *Driver) FirstRunCreatedAt(ctx context.Context) (int64, bool, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return 0, false, err
	}
	defer unlock()
	var first int64
	found := false
	for _, r := range d.runs {
		if !found || r.CreatedAt < first {
			first, found = r.CreatedAt, true
		}
	}
	return first, found, nil
}

// NextActivityAt is the smallest created_at in [from, to) of a run or a
// session.
func (d *Driver) NextActivityAt(ctx context.Context, from, to int64) (int64, bool, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return 0, false, err
	}
	defer unlock()
	var next int64
	found := false
	see := func(at int64) {
		if at >= from && at < to && (!found || at < next) {
			next, found = at, true
		}
	}
	for _, r := range d.runs {
		see(r.CreatedAt)
	}
	for _, s := range d.sessions {
		see(s.CreatedAt)
	}
	return next, found, nil
}

// LastCompletedMetricsDate is the newest completed daily row's date.
func (d *Driver) LastCompletedMetricsDate(ctx context.Context) (string, bool, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return "", false, err
	}
	defer unlock()
	last := ""
	for _, m := range d.control.metrics {
		if m.Completed && m.AggregationPeriod == db.DailyMetricsPeriod && m.Date > last {
			last = m.Date
		}
	}
	return last, last != "", nil
}

// UpsertDailyMetrics writes rows keyed by (user_id, date, aggregation_period).
func (d *Driver) UpsertDailyMetrics(ctx context.Context, rows []db.DailyMetrics) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if d.control.metrics == nil {
		d.control.metrics = map[[3]string]*db.DailyMetrics{}
	}
	for _, m := range rows {
		cp := m
		cp.TokenMetrics, cp.ModelMetrics = bytes.Clone(m.TokenMetrics), bytes.Clone(m.ModelMetrics)
		k := [3]string{m.UserID, m.Date, m.AggregationPeriod}
		if old, ok := d.control.metrics[k]; ok {
			cp.ID, cp.CreatedAt = old.ID, old.CreatedAt
		}
		d.control.metrics[k] = &cp
	}
	return nil
}

// ListDailyMetrics returns rows by date, then user.
func (d *Driver) ListDailyMetrics(ctx context.Context, f db.MetricsFilter) ([]db.DailyMetrics, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out := []db.DailyMetrics{}
	for _, m := range d.control.metrics {
		if (f.From != "" && m.Date < f.From) || (f.To != "" && m.Date > f.To) || ((f.ByUser || f.UserID != "") && m.UserID != f.UserID) {
			continue
		}
		cp := *m
		cp.TokenMetrics, cp.ModelMetrics = bytes.Clone(m.TokenMetrics), bytes.Clone(m.ModelMetrics)
		out = append(out, cp)
	}
	slices.SortFunc(out, func(a, b db.DailyMetrics) int {
		return cmp.Or(cmp.Compare(a.Date, b.Date), cmp.Compare(a.UserID, b.UserID))
	})
	return out, nil
}

// insertNew stores v under id in *m (made on first use); a taken id is
// db.ErrExists naming what.
func insertNew[T any](m *map[string]*T, id string, v *T, what string) error {
	if *m == nil {
		*m = map[string]*T{}
	}
	if _, ok := (*m)[id]; ok {
		return fmt.Errorf("%w: %s %s", db.ErrExists, what, id)
	}
	(*m)[id] = v
	return nil
}

// getVisible returns a clone of m[id] when ctx's user may see it (owner
// gives its user), else db.ErrNotFound naming what.
func getVisible[T any](ctx context.Context, m map[string]*T, id, what string, owner func(*T) string, clone func(*T) *T) (*T, error) {
	v, ok := m[id]
	if !ok || !visible(ctx, owner(v)) {
		return nil, fmt.Errorf("%w: %s %s", db.ErrNotFound, what, id)
	}
	return clone(v), nil
}
