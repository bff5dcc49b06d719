package db

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ScheduleLockGrace is how long, in seconds, a schedule another executor
// has locked (agno_schedules.locked_by and locked_at: Agno's claim while it
// runs a firing) is left to it: neither DueSchedules nor AdvanceSchedule
// takes it. It is Agno's own stale-lock rule; Agentry never locks.
const ScheduleLockGrace = 300

// Schedule is one row of agno_schedules (Agno 3.0's shape, with the
// provenance columns 3.0 added): a cron expression in a time zone that
// fires Method Endpoint with Payload. Agentry fires run endpoints only
// (POST /agents|teams|workflows/{id}/runs). TargetType and TargetID are
// the provenance a control plane (ManagedBy) or code stamps: the
// component the schedule was made for, which its endpoint must still
// address (else the scheduler refuses it: endpoint drift); the HTTP
// routes never write them, as in Agno 3.0. NextRunAt is the next due time (epoch seconds; 0 is
// NULL). A schedule without a user (UserID "") is visible only to
// unscoped callers, as in Agno. Names are unique per owner.
type Schedule struct {
	ID                string
	Name              string
	Description       string
	Method            string
	Endpoint          string
	Payload           json.RawMessage
	CronExpr          string
	Timezone          string
	TimeoutSeconds    int64
	MaxRetries        int64
	RetryDelaySeconds int64
	Enabled           bool
	NextRunAt         int64
	LockedBy          string
	LockedAt          int64
	UserID            string
	// Provenance (3.0): who manages the row, the component it targets and
	// the runs that wrote it; DisabledReason says why the system disabled it.
	ManagedBy          string
	TargetType         string
	TargetID           string
	CreatedByRunID     string
	CreatedBySessionID string
	UpdatedByRunID     string
	UpdatedBySessionID string
	DisabledReason     string
	CreatedAt          int64
	UpdatedAt          int64
}

// ScheduleRun is one row of agno_schedule_runs: one firing of a schedule.
// Status is one of ScheduleRunStatuses; UserID is the schedule's owner,
// copied so that the runs route scopes without a join.
type ScheduleRun struct {
	ID           string
	ScheduleID   string
	Attempt      int64
	TriggeredAt  int64
	CompletedAt  int64
	Status       string
	StatusCode   int64
	RunID        string
	SessionID    string
	Error        string
	Input        json.RawMessage
	Output       json.RawMessage
	Requirements json.RawMessage
	UserID       string
	CreatedAt    int64
}

// Schedule run statuses (Agno's, plus cancelled which Agno's executor
// writes on shutdown).
const (
	ScheduleRunRunning   = "running"
	ScheduleRunSuccess   = "success"
	ScheduleRunFailed    = "failed"
	ScheduleRunPaused    = "paused"
	ScheduleRunTimeout   = "timeout"
	ScheduleRunCancelled = "cancelled"
)

// ScheduleRunSessionDeleted is the error DeleteSessions records on a
// schedule run that was running or paused when its run's session was
// deleted; it fails the schedule run (not retried), as the scheduler fails
// a running one whose run is missing.
const ScheduleRunSessionDeleted = "the run no longer exists: its session was deleted"

// ScheduleRunStatuses are the status values of agno_schedule_runs.
var ScheduleRunStatuses = []string{ScheduleRunRunning, ScheduleRunSuccess, ScheduleRunFailed, ScheduleRunPaused,
	ScheduleRunTimeout, ScheduleRunCancelled}

// ScheduleFilter selects schedules; Enabled nil does not filter. Limit and
// Page (from 1) are required. UserID "" does not filter (the scope does).
type ScheduleFilter struct {
	Enabled     *bool
	UserID      string
	Limit, Page int
}

// ScheduleRunFilter selects schedule runs, newest first. ScheduleID and
// Status "" do not filter, nor TriggeredAt and Attempt 0.
type ScheduleRunFilter struct {
	ScheduleID, Status   string
	TriggeredAt, Attempt int64
	Limit, Page          int
}

// DueCursor is where a read of due schedules resumes: after the schedule
// with id ID due at NextRunAt, in the (next_run_at, id) order. The
// scheduler reads past the schedules it could not fire (they stay due) so
// that they never hide the ones due after them.
type DueCursor struct {
	NextRunAt int64
	ID        string
}

// ScheduleDriver stores schedules and their runs. Reads and writes apply
// the context's user scope inside their queries, except DueSchedules,
// AdvanceSchedule and DisableSchedule, which the scheduler calls for every
// owner.
type ScheduleDriver interface {
	// CreateSchedule inserts a schedule; a taken id, or a name the owner
	// already uses, is ErrExists. The name is checked and the row written
	// atomically: of concurrent creates (and renames) onto one owner's
	// name, one succeeds, whatever unique indexes the table has.
	CreateSchedule(ctx context.Context, s *Schedule) error
	GetSchedule(ctx context.Context, id string) (*Schedule, error)
	// ListSchedules pages schedules, newest first, and counts the matches.
	ListSchedules(ctx context.Context, f ScheduleFilter) ([]Schedule, int, error)
	// EditSchedule writes the mutable columns (ScheduleMutableColumns)
	// whose value differs between read and edited, and updated_at, of
	// schedule read.ID in scope, only while the row still has read's
	// cron_expr, timezone, method and endpoint (compare-and-set on the
	// columns an edit derives next_run_at and the target from). The other
	// columns keep what was stored since, by AdvanceSchedule or
	// DisableSchedule for instance. False when the row did not match;
	// ErrNotFound when not in scope, ErrExists when the owner uses the new
	// name already (checked and written atomically, as CreateSchedule).
	EditSchedule(ctx context.Context, read, edited *Schedule) (bool, error)
	// DeleteSchedule deletes a schedule in scope and its runs; ErrNotFound
	// when not in scope.
	DeleteSchedule(ctx context.Context, id string) error
	// DueSchedules lists enabled schedules with next_run_at <= now, of
	// every owner, in (next_run_at, id) order, after the cursor (nil: from
	// the first).
	DueSchedules(ctx context.Context, now int64, after *DueCursor, limit int) ([]Schedule, error)
	// AdvanceSchedule moves next_run_at from from to to, only while it is
	// still from (compare-and-set: one of several replicas wins).
	AdvanceSchedule(ctx context.Context, id string, from, to, at int64) (bool, error)
	// DisableSchedule disables schedule id with reason (disabled_reason)
	// and updated_at at, only while it is enabled with cronExpr and
	// timezone (compare-and-set: an edit since the caller read it is
	// kept); it writes no other column. False when the row did not match.
	DisableSchedule(ctx context.Context, id, cronExpr, timezone, reason string, at int64) (bool, error)
	// CreateScheduleRun inserts a run; a taken id is ErrExists.
	CreateScheduleRun(ctx context.Context, r *ScheduleRun) error
	GetScheduleRun(ctx context.Context, id string) (*ScheduleRun, error)
	ListScheduleRuns(ctx context.Context, f ScheduleRunFilter) ([]ScheduleRun, int, error)
	// FinishScheduleRun records a running run's outcome (status,
	// completed_at, status_code, error, output); false when the run was not
	// running any more.
	FinishScheduleRun(ctx context.Context, r *ScheduleRun) (bool, error)
	// StartScheduleRun names the run of a running schedule run written
	// before its run started (a retry): run_id, session_id and input, only
	// while run_id is NULL; false otherwise.
	StartScheduleRun(ctx context.Context, r *ScheduleRun) (bool, error)
}

// scheduleDriver returns the driver's ScheduleDriver ability.
func (d *DB) scheduleDriver() (ScheduleDriver, error) {
	sd, ok := d.driver.(ScheduleDriver)
	if !ok {
		return nil, fmt.Errorf("%w: the %s driver does not store schedules", ErrUnsupportedDriver, d.driver.Dialect())
	}
	return sd, nil
}

// SupportsSchedules reports whether the database stores schedules.
func (d *DB) SupportsSchedules() bool {
	_, err := d.scheduleDriver()
	return err == nil
}

func checkSchedule(s *Schedule) error {
	switch {
	case s.ID == "":
		return fmt.Errorf("%w: a schedule's id is required", ErrInvalidRecord)
	case s.Name == "" || s.CronExpr == "" || s.Endpoint == "" || s.Method == "" || s.Timezone == "":
		return fmt.Errorf("%w: schedule %s needs a name, cron_expr, endpoint, method and timezone", ErrInvalidRecord, s.ID)
	case len(s.Payload) > 0 && !json.Valid(s.Payload):
		return fmt.Errorf("%w: the payload of schedule %s must be JSON", ErrInvalidRecord, s.ID)
	}
	return checkUserID("schedule", s.ID, s.UserID)
}

// CreateSchedule validates and stores a schedule; a scoped caller stores it
// as itself.
func (d *DB) CreateSchedule(ctx context.Context, s *Schedule) (*Schedule, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: no schedule", ErrInvalidRecord)
	}
	cp := *s
	d.prepareWrite(ctx, &cp.UserID, &cp.CreatedAt, &cp.UpdatedAt)
	cp.UpdatedAt = 0 // Agno leaves updated_at NULL until the first update
	if err := checkSchedule(&cp); err != nil {
		return nil, err
	}
	sd, err := d.scheduleDriver()
	if err != nil {
		return nil, err
	}
	bctx, call := d.bound(ctx)
	if err := call.done(sd.CreateSchedule(bctx, &cp)); err != nil {
		return nil, err
	}
	return &cp, nil
}

// GetSchedule returns a schedule in scope or ErrNotFound.
func (d *DB) GetSchedule(ctx context.Context, id string) (*Schedule, error) {
	sd, err := d.scheduleDriver()
	if err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := sd.GetSchedule(ctx, id)
	return out, call.done(err)
}

// ListSchedules validates the filter and returns a page and the total.
func (d *DB) ListSchedules(ctx context.Context, f ScheduleFilter) ([]Schedule, int, error) {
	if f.Limit <= 0 || f.Page < 1 || PageOffsetOverflows(f.Limit, f.Page) {
		return nil, 0, fmt.Errorf("%w: limit must be positive and page at least 1", ErrInvalidFilter)
	}
	sd, err := d.scheduleDriver()
	if err != nil {
		return nil, 0, err
	}
	scopeUser(ctx, &f.UserID)
	ctx, call := d.bound(ctx)
	out, n, err := sd.ListSchedules(ctx, f)
	return out, n, call.done(err)
}

// ErrScheduleChanged: an edit of a schedule was not written because the
// schedule's cron_expr, timezone, method or endpoint changed since the
// editor read it; read it again and redo the edit.
var ErrScheduleChanged = errors.New("db: the schedule changed since it was read")

// EditSchedule writes the changes edited makes to schedule read (in scope)
// and returns the stored row: only the mutable columns whose value differs
// between the two (and updated_at), and only while the schedule still has
// read's cron_expr, timezone, method and endpoint (ErrScheduleChanged
// otherwise). A firing's next_run_at, or a disable, stored since read was
// taken stays, unless the edit itself sets that column. It is the only
// update of a schedule's columns: no write puts a whole row back.
func (d *DB) EditSchedule(ctx context.Context, read, edited *Schedule) (*Schedule, error) {
	if read == nil || edited == nil || read.ID != edited.ID {
		return nil, fmt.Errorf("%w: an edit needs the schedule as read and as edited, with one id", ErrInvalidRecord)
	}
	cp := *edited
	cp.UpdatedAt = d.now().Unix()
	if err := checkSchedule(&cp); err != nil {
		return nil, err
	}
	sd, err := d.scheduleDriver()
	if err != nil {
		return nil, err
	}
	bctx, call := d.bound(ctx)
	written, err := sd.EditSchedule(bctx, read, &cp)
	if err = call.done(err); err != nil {
		return nil, err
	}
	if !written {
		return nil, fmt.Errorf("%w: schedule %s", ErrScheduleChanged, read.ID)
	}
	return d.GetSchedule(ctx, read.ID)
}

// DeleteSchedule deletes a schedule in scope with its runs.
func (d *DB) DeleteSchedule(ctx context.Context, id string) error {
	sd, err := d.scheduleDriver()
	if err != nil {
		return err
	}
	ctx, call := d.bound(ctx)
	return call.done(sd.DeleteSchedule(ctx, id))
}

// DueSchedules lists the enabled schedules due at now, of every owner,
// in (next_run_at, id) order after the cursor (nil: from the first); the
// scheduler's read: a scoped context is refused.
func (d *DB) DueSchedules(ctx context.Context, now int64, after *DueCursor, limit int) ([]Schedule, error) {
	if _, scoped := UserScope(ctx); scoped {
		return nil, fmt.Errorf("%w: due schedules are read for every owner, not in a user's scope", ErrInvalidFilter)
	}
	sd, err := d.scheduleDriver()
	if err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := sd.DueSchedules(ctx, now, after, max(limit, 1))
	return out, call.done(err)
}

// AdvanceSchedule moves a schedule's next_run_at from from to to while it
// is still from; moved is false when another replica advanced it first.
func (d *DB) AdvanceSchedule(ctx context.Context, id string, from, to int64) (moved bool, err error) {
	sd, err := d.scheduleDriver()
	if err != nil {
		return false, err
	}
	ctx, call := d.bound(ctx)
	moved, err = sd.AdvanceSchedule(ctx, id, from, to, d.now().Unix())
	return moved, call.done(err)
}

// DisableSchedule disables a schedule that no longer fires, saying why,
// only while it is enabled with the cron expression and time zone the
// caller read (a schedule edited since is left alone), and changes no
// other column; disabled is false when it did not match. The scheduler's
// write, for every owner.
func (d *DB) DisableSchedule(ctx context.Context, read *Schedule, reason string) (disabled bool, err error) {
	sd, err := d.scheduleDriver()
	if err != nil {
		return false, err
	}
	ctx, call := d.bound(ctx)
	disabled, err = sd.DisableSchedule(ctx, read.ID, read.CronExpr, read.Timezone, reason, d.now().Unix())
	return disabled, call.done(err)
}

// CreateScheduleRun stores a schedule run; a taken id is ErrExists.
func (d *DB) CreateScheduleRun(ctx context.Context, r *ScheduleRun) (*ScheduleRun, error) {
	switch {
	case r == nil || r.ID == "" || r.ScheduleID == "":
		return nil, fmt.Errorf("%w: a schedule run needs an id and a schedule_id", ErrInvalidRecord)
	case !slices.Contains(ScheduleRunStatuses, r.Status):
		return nil, fmt.Errorf("%w: schedule run status %q is not one of %s", ErrInvalidRecord, r.Status, strings.Join(ScheduleRunStatuses, ", "))
	}
	for _, j := range []json.RawMessage{r.Input, r.Output, r.Requirements} {
		if len(j) > 0 && !json.Valid(j) {
			return nil, fmt.Errorf("%w: schedule run %s: input, output and requirements must be JSON", ErrInvalidRecord, r.ID)
		}
	}
	cp := *r
	if cp.CreatedAt == 0 {
		cp.CreatedAt = d.now().Unix()
	}
	if cp.Attempt == 0 {
		cp.Attempt = 1
	}
	sd, err := d.scheduleDriver()
	if err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	if err := call.done(sd.CreateScheduleRun(ctx, &cp)); err != nil {
		return nil, err
	}
	return &cp, nil
}

// GetScheduleRun returns a schedule run in scope or ErrNotFound.
func (d *DB) GetScheduleRun(ctx context.Context, id string) (*ScheduleRun, error) {
	sd, err := d.scheduleDriver()
	if err != nil {
		return nil, err
	}
	ctx, call := d.bound(ctx)
	out, err := sd.GetScheduleRun(ctx, id)
	return out, call.done(err)
}

// ListScheduleRuns pages schedule runs in scope, newest first.
func (d *DB) ListScheduleRuns(ctx context.Context, f ScheduleRunFilter) ([]ScheduleRun, int, error) {
	if f.Limit <= 0 || f.Page < 1 || PageOffsetOverflows(f.Limit, f.Page) {
		return nil, 0, fmt.Errorf("%w: limit must be positive and page at least 1", ErrInvalidFilter)
	}
	sd, err := d.scheduleDriver()
	if err != nil {
		return nil, 0, err
	}
	ctx, call := d.bound(ctx)
	out, n, err := sd.ListScheduleRuns(ctx, f)
	return out, n, call.done(err)
}

// FinishScheduleRun records the outcome of a running schedule run.
func (d *DB) FinishScheduleRun(ctx context.Context, r *ScheduleRun) (bool, error) {
	if !slices.Contains(ScheduleRunStatuses, r.Status) || r.Status == ScheduleRunRunning {
		return false, fmt.Errorf("%w: a finished schedule run's status is one of %s, not %q", ErrInvalidRecord,
			strings.Join(ScheduleRunStatuses[1:], ", "), r.Status)
	}
	if len(r.Output) > 0 && !json.Valid(r.Output) {
		return false, fmt.Errorf("%w: schedule run %s: output must be JSON", ErrInvalidRecord, r.ID)
	}
	if len(r.Requirements) > 0 && !json.Valid(r.Requirements) {
		return false, fmt.Errorf("%w: schedule run %s: requirements must be JSON", ErrInvalidRecord, r.ID)
	}
	sd, err := d.scheduleDriver()
	if err != nil {
		return false, err
	}
	cp := *r
	if cp.CompletedAt == 0 {
		cp.CompletedAt = d.now().Unix()
	}
	ctx, call := d.bound(ctx)
	ok, err := sd.FinishScheduleRun(ctx, &cp)
	return ok, call.done(err)
}

// StartScheduleRun records the run a running schedule run started (its
// RunID, SessionID and Input), once: false when the row has a run already,
// is finished, or is not in scope.
func (d *DB) StartScheduleRun(ctx context.Context, r *ScheduleRun) (bool, error) {
	if r == nil || r.ID == "" || r.RunID == "" {
		return false, fmt.Errorf("%w: starting a schedule run needs its id and the run's id", ErrInvalidRecord)
	}
	if len(r.Input) > 0 && !json.Valid(r.Input) {
		return false, fmt.Errorf("%w: schedule run %s: input must be JSON", ErrInvalidRecord, r.ID)
	}
	sd, err := d.scheduleDriver()
	if err != nil {
		return false, err
	}
	ctx, call := d.bound(ctx)
	ok, err := sd.StartScheduleRun(ctx, r)
	return ok, call.done(err)
}
