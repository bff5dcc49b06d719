package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/agentryhq/agentry/db"
)

var _ db.ScheduleDriver = (*Driver)(nil)

func cloneSchedule(s *db.Schedule) *db.Schedule {
	cp := *s
	cp.Payload = bytes.Clone(s.Payload)
	return &cp
}

func cloneScheduleRun(r *db.ScheduleRun) *db.ScheduleRun {
	cp := *r
	cp.Input, cp.Output, cp.Requirements = bytes.Clone(r.Input), bytes.Clone(r.Output), bytes.Clone(r.Requirements)
	return &cp
}

// nameTaken reports whether owner has a schedule named name other than
// id. Its callers hold the write lock through their insert or update: a
// name is checked and taken at once.
func (d *Driver) nameTaken(id, name, owner string) bool {
	for _, s := range d.control.schedules {
		if s.ID != id && s.Name == name && s.UserID == owner {
			return true
		}
	}
	return false
}

// CreateSchedule inserts a schedule; a taken id or owner's name is db.ErrExists.
func (d *Driver) CreateSchedule(ctx context.Context, s *db.Schedule) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if d.control.schedules == nil {
		d.control.schedules = map[string]*db.Schedule{}
	}
	if _, ok := d.control.schedules[s.ID]; ok || d.nameTaken(s.ID, s.Name, s.UserID) {
		return fmt.Errorf("%w: schedule %s (or its name %q)", db.ErrExists, s.ID, s.Name)
	}
	d.control.schedules[s.ID] = cloneSchedule(s)
	return nil
}

// GetSchedule returns a schedule in scope or db.ErrNotFound.
func (d *Driver) GetSchedule(ctx context.Context, id string) (*db.Schedule, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return getVisible(ctx, d.control.schedules, id, "schedule", func(s *db.Schedule) string { return s.UserID }, cloneSchedule)
}

// ListSchedules pages schedules in scope, newest first.
func (d *Driver) ListSchedules(ctx context.Context, f db.ScheduleFilter) ([]db.Schedule, int, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	var match []*db.Schedule
	for _, s := range d.control.schedules {
		if visible(ctx, s.UserID) && (f.UserID == "" || s.UserID == f.UserID) && (f.Enabled == nil || *f.Enabled == s.Enabled) {
			match = append(match, s)
		}
	}
	slices.SortFunc(match, func(a, b *db.Schedule) int {
		return -cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	out := []db.Schedule{}
	for _, s := range page(match, f.Limit, f.Page) {
		out = append(out, *cloneSchedule(s))
	}
	return out, len(match), nil
}

// EditSchedule writes the columns edited changes of schedule read in
// scope, while it still has read's cron_expr, timezone, method and
// endpoint.
func (d *Driver) EditSchedule(ctx context.Context, read, edited *db.Schedule) (bool, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	old, ok := d.control.schedules[read.ID]
	if !ok || !visible(ctx, old.UserID) {
		return false, fmt.Errorf("%w: schedule %s", db.ErrNotFound, read.ID)
	}
	if edited.Name != read.Name && d.nameTaken(read.ID, edited.Name, old.UserID) {
		return false, fmt.Errorf("%w: schedule named %q", db.ErrExists, edited.Name)
	}
	if old.CronExpr != read.CronExpr || old.Timezone != read.Timezone || old.Method != read.Method || old.Endpoint != read.Endpoint {
		return false, nil
	}
	cp := cloneSchedule(old)
	for _, c := range db.ScheduleEdits(read, edited) {
		c.Copy(cp, edited)
	}
	cp.UpdatedAt = edited.UpdatedAt
	d.control.schedules[read.ID] = cp
	return true, nil
}

// DeleteSchedule deletes a schedule in scope and its runs.
func (d *Driver) DeleteSchedule(ctx context.Context, id string) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	s, ok := d.control.schedules[id]
	if !ok || !visible(ctx, s.UserID) {
		return fmt.Errorf("%w: schedule %s", db.ErrNotFound, id)
	}
	delete(d.control.schedules, id)
	for rid, r := range d.control.scheduleRuns {
		if r.ScheduleID == id {
			delete(d.control.scheduleRuns, rid)
		}
	}
	return nil
}

// DueSchedules lists enabled schedules due at now in (next_run_at, id)
// order, after the cursor.
func (d *Driver) DueSchedules(ctx context.Context, now int64, after *db.DueCursor, limit int) ([]db.Schedule, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var match []*db.Schedule
	for _, s := range d.control.schedules {
		past := after == nil || s.NextRunAt > after.NextRunAt || (s.NextRunAt == after.NextRunAt && s.ID > after.ID)
		if s.Enabled && s.NextRunAt != 0 && s.NextRunAt <= now && past && !lockedAt(s, now) {
			match = append(match, s)
		}
	}
	slices.SortFunc(match, func(a, b *db.Schedule) int {
		return cmp.Or(cmp.Compare(a.NextRunAt, b.NextRunAt), cmp.Compare(a.ID, b.ID))
	})
	var out []db.Schedule
	for _, s := range match[:min(limit, len(match))] {
		out = append(out, *cloneSchedule(s))
	}
	return out, nil
}

// lockedAt reports whether another executor's lock on s is fresh at now
// (db.ScheduleLockGrace).
func lockedAt(s *db.Schedule, now int64) bool {
	return s.LockedBy != "" && s.LockedAt != 0 && s.LockedAt >= now-db.ScheduleLockGrace
}

// AdvanceSchedule compare-and-sets next_run_at.
func (d *Driver) AdvanceSchedule(ctx context.Context, id string, from, to, at int64) (bool, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	s, ok := d.control.schedules[id]
	if !ok || s.NextRunAt != from || lockedAt(s, at) {
		return false, nil
	}
	s.NextRunAt, s.UpdatedAt = to, at
	return true, nil
}

// DisableSchedule disables a schedule still enabled with cronExpr and
// timezone, changing only enabled, disabled_reason and updated_at.
func (d *Driver) DisableSchedule(ctx context.Context, id, cronExpr, timezone, reason string, at int64) (bool, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	s, ok := d.control.schedules[id]
	if !ok || !s.Enabled || s.CronExpr != cronExpr || s.Timezone != timezone {
		return false, nil
	}
	cp := cloneSchedule(s)
	cp.Enabled, cp.DisabledReason, cp.UpdatedAt = false, reason, at
	d.control.schedules[id] = cp
	return true, nil
}

// CreateScheduleRun inserts a schedule run; a taken id is db.ErrExists.
func (d *Driver) CreateScheduleRun(ctx context.Context, r *db.ScheduleRun) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return insertNew(&d.control.scheduleRuns, r.ID, cloneScheduleRun(r), "schedule run")
}

// GetScheduleRun returns a schedule run in scope or db.ErrNotFound.
func (d *Driver) GetScheduleRun(ctx context.Context, id string) (*db.ScheduleRun, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return getVisible(ctx, d.control.scheduleRuns, id, "schedule run", func(r *db.ScheduleRun) string { return r.UserID }, cloneScheduleRun)
}

// ListScheduleRuns pages schedule runs in scope, newest first.
func (d *Driver) ListScheduleRuns(ctx context.Context, f db.ScheduleRunFilter) ([]db.ScheduleRun, int, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, 0, err
	}
	defer unlock()
	var match []*db.ScheduleRun
	for _, r := range d.control.scheduleRuns {
		if visible(ctx, r.UserID) && (f.ScheduleID == "" || r.ScheduleID == f.ScheduleID) && (f.Status == "" || r.Status == f.Status) &&
			(f.TriggeredAt == 0 || r.TriggeredAt == f.TriggeredAt) && (f.Attempt == 0 || r.Attempt == f.Attempt) {
			match = append(match, r)
		}
	}
	slices.SortFunc(match, func(a, b *db.ScheduleRun) int {
		return -cmp.Or(cmp.Compare(a.CreatedAt, b.CreatedAt), cmp.Compare(a.TriggeredAt, b.TriggeredAt), cmp.Compare(a.ID, b.ID))
	})
	out := []db.ScheduleRun{}
	for _, r := range page(match, f.Limit, f.Page) {
		out = append(out, *cloneScheduleRun(r))
	}
	return out, len(match), nil
}

// FinishScheduleRun records a running schedule run's outcome.
func (d *Driver) FinishScheduleRun(ctx context.Context, r *db.ScheduleRun) (bool, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	old, ok := d.control.scheduleRuns[r.ID]
	if !ok || !visible(ctx, old.UserID) || old.Status != db.ScheduleRunRunning {
		return false, nil
	}
	old.Status, old.CompletedAt, old.StatusCode, old.Error, old.Output = r.Status, r.CompletedAt, r.StatusCode, r.Error, bytes.Clone(r.Output)
	old.Requirements = bytes.Clone(r.Requirements)
	return true, nil
}

// StartScheduleRun names the run of a running schedule run that has none.
func (d *Driver) StartScheduleRun(ctx context.Context, r *db.ScheduleRun) (bool, error) {
	unlock, err := d.write(ctx)
	if err != nil {
		return false, err
	}
	defer unlock()
	old, ok := d.control.scheduleRuns[r.ID]
	if !ok || !visible(ctx, old.UserID) || old.Status != db.ScheduleRunRunning || old.RunID != "" {
		return false, nil
	}
	old.RunID, old.SessionID, old.Input = r.RunID, r.SessionID, bytes.Clone(r.Input)
	return true, nil
}
