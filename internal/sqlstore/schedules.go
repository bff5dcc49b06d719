package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/agentryhq/agentry/db"
)

const scheduleCols = "id, name, description, method, endpoint, payload, cron_expr, timezone, timeout_seconds, max_retries, retry_delay_seconds, " +
	"enabled, next_run_at, locked_by, locked_at, user_id, managed_by, target_type, target_id, created_by_run_id, created_by_session_id, " +
	"updated_by_run_id, updated_by_session_id, disabled_reason, created_at, updated_at"

const scheduleRunCols = "id, schedule_id, attempt, triggered_at, completed_at, status, status_code, run_id, session_id, error, input, output, " +
	"requirements, user_id, created_at"

var _ db.ScheduleDriver = (*Store)(nil)

func (s *Store) schedules() string    { return s.d.Table(s.t.Schedules) }
func (s *Store) scheduleRuns() string { return s.d.Table(s.t.ScheduleRuns) }

// IsUniqueViolation recognises a duplicate key on SQLite, Postgres and
// MySQL/MariaDB (runlog's appends use it too).
func IsUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	m := err.Error()
	return strings.Contains(m, "UNIQUE constraint failed") || strings.Contains(m, "23505") ||
		strings.Contains(m, "Duplicate entry") || strings.Contains(m, "Error 1062")
}

// nameTaken reports whether owner (NULL for "") has a schedule named name
// other than id. Its callers hold the names lock (withNamesLock): a check
// outside it races another create of the name.
func (s *Store) nameTaken(ctx context.Context, q Querier, id, name, owner string) (bool, error) {
	w := &where{}
	w.add("name = ?", name)
	w.add("id <> ?", id)
	if owner == "" {
		w.add("user_id IS NULL")
	} else {
		w.add(s.d.EqExact("user_id"), owner)
	}
	var n int
	err := q.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(*) FROM "+s.schedules()+w.String()), w.args...).Scan(&n)
	return n > 0, err
}

// withNamesLock runs fn under the lock of the schedules table's names
// (lockedTx): every create and rename takes it, so a name's check and its
// write are one step for every Agentry process on the database. The unique
// indexes on names are not enough: MySQL's (user_id, name) does not cover
// unowned schedules (NULLs differ), and a table another writer created may
// have none.
func (s *Store) withNamesLock(ctx context.Context, fn func(ctx context.Context, q Querier) error) error {
	return s.lockedTx(ctx, namesLockKey(s.schedules()), func(ctx context.Context, tx *sql.Tx) error { return fn(ctx, tx) })
}

// namesLockKey names the lock of a schedules table's names: a hash, since
// MySQL's lock names are at most 64 characters.
func namesLockKey(table string) string { return hashedLockKey("agentry_schedule_names:", table, 12) }

// CreateSchedule inserts a schedule; a taken id or owner's name is
// db.ErrExists. The name is checked and the row inserted under the names
// lock.
func (s *Store) CreateSchedule(ctx context.Context, sc *db.Schedule) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	err := s.withNamesLock(ctx, func(ctx context.Context, q Querier) error {
		taken, err := s.nameTaken(ctx, q, sc.ID, sc.Name, sc.UserID)
		if err != nil {
			return err
		}
		if taken {
			return fmt.Errorf("%w: schedule named %q", db.ErrExists, sc.Name)
		}
		_, err = q.ExecContext(ctx, s.d.Bind("INSERT INTO "+s.schedules()+" ("+scheduleCols+") VALUES ("+placeholders(26)+")"),
			sc.ID, sc.Name, nullStr(sc.Description), sc.Method, sc.Endpoint, s.jsonArg(sc.Payload), sc.CronExpr, sc.Timezone,
			sc.TimeoutSeconds, sc.MaxRetries, sc.RetryDelaySeconds, sc.Enabled, nullInt(sc.NextRunAt), nullStr(sc.LockedBy), nullInt(sc.LockedAt),
			nullStr(sc.UserID), nullStr(sc.ManagedBy), nullStr(sc.TargetType), nullStr(sc.TargetID), nullStr(sc.CreatedByRunID),
			nullStr(sc.CreatedBySessionID), nullStr(sc.UpdatedByRunID), nullStr(sc.UpdatedBySessionID), nullStr(sc.DisabledReason),
			sc.CreatedAt, nullInt(sc.UpdatedAt))
		if IsUniqueViolation(err) {
			return fmt.Errorf("%w: schedule %s (or its name %q)", db.ErrExists, sc.ID, sc.Name)
		}
		return err
	})
	if errors.Is(err, db.ErrExists) {
		return err
	}
	return s.fail("create schedule "+sc.ID, err)
}

// GetSchedule returns a schedule in scope or db.ErrNotFound.
func (s *Store) GetSchedule(ctx context.Context, id string) (*db.Schedule, error) {
	w := &where{}
	w.add("id = ?", id)
	s.scope(ctx, w)
	sc, err := scanSchedule(s.r.QueryRowContext(ctx, s.d.Bind("SELECT "+scheduleCols+" FROM "+s.schedules()+w.String()), w.args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: schedule %s", db.ErrNotFound, id)
	}
	if err != nil {
		return nil, s.fail("get schedule "+id, err)
	}
	return sc, nil
}

// ListSchedules pages schedules in scope, newest first.
func (s *Store) ListSchedules(ctx context.Context, f db.ScheduleFilter) ([]db.Schedule, int, error) {
	w := &where{}
	if f.Enabled != nil {
		w.add("enabled = ?", *f.Enabled)
	}
	s.userEq(w, "user_id", f.UserID)
	s.scope(ctx, w)
	var total int
	if err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(*) FROM "+s.schedules()+w.String()), w.args...).Scan(&total); err != nil {
		return nil, 0, s.fail("count schedules", err)
	}
	rows, err := s.r.QueryContext(ctx, s.d.Bind(fmt.Sprintf("SELECT %s FROM %s%s ORDER BY created_at DESC, id DESC LIMIT %d OFFSET %d",
		scheduleCols, s.schedules(), w.String(), f.Limit, offset(f.Limit, f.Page))), w.args...)
	if err != nil {
		return nil, 0, s.fail("list schedules", err)
	}
	defer rows.Close()
	out, corrupt, err := decodeRows(rows, []db.Schedule{}, scanSchedule)
	if err != nil {
		return nil, 0, s.fail("list schedules", err)
	}
	return out, total, corrupt
}

// scheduleEdit lists the SET clauses and arguments of the mutable
// columns whose value differs between read and edited, and updated_at.
func (s *Store) scheduleEdit(read, edited *db.Schedule) (sets []string, args []any) {
	for _, c := range db.ScheduleEdits(read, edited) {
		sets, args = append(sets, c.Name+" = ?"), append(args, s.scheduleArg(c, edited))
	}
	return append(sets, "updated_at = ?"), append(args, edited.UpdatedAt)
}

// scheduleArg is the argument that stores column c of sc: NULL for the
// zero value of a nullable column, as Agno stores an absent one.
func (s *Store) scheduleArg(c db.ScheduleColumn, sc *db.Schedule) any {
	switch v := c.Value(sc).(type) {
	case json.RawMessage:
		return s.jsonArg(v)
	case string:
		if c.Nullable {
			return nullStr(v)
		}
		return v
	case int64:
		if c.Nullable {
			return nullInt(v)
		}
		return v
	default:
		return v
	}
}

// EditSchedule writes the columns edited changes of schedule read in
// scope, while it still has read's cron_expr, timezone, method and
// endpoint. A rename checks and writes the name under the names lock.
func (s *Store) EditSchedule(ctx context.Context, read, edited *db.Schedule) (bool, error) {
	if err := s.gate.enter(ctx); err != nil {
		return false, err
	}
	defer s.gate.leave()
	var written bool
	edit := func(ctx context.Context, q Querier) (err error) {
		written, err = s.editSchedule(ctx, q, read, edited)
		return err
	}
	var err error
	if edited.Name != read.Name {
		err = s.withNamesLock(ctx, edit)
	} else {
		err = edit(ctx, s.w)
	}
	if errors.Is(err, db.ErrExists) || errors.Is(err, db.ErrNotFound) {
		return false, err
	}
	return written, s.fail("edit schedule "+read.ID, err)
}

func (s *Store) editSchedule(ctx context.Context, q Querier, read, edited *db.Schedule) (bool, error) {
	w := &where{}
	w.add("id = ?", read.ID)
	s.scope(ctx, w)
	var owner sql.NullString
	if err := q.QueryRowContext(ctx, s.d.Bind("SELECT user_id FROM "+s.schedules()+w.String()), w.args...).Scan(&owner); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return false, fmt.Errorf("%w: schedule %s", db.ErrNotFound, read.ID)
		}
		return false, err
	}
	if edited.Name != read.Name {
		taken, err := s.nameTaken(ctx, q, read.ID, edited.Name, owner.String)
		if err != nil {
			return false, err
		}
		if taken {
			return false, fmt.Errorf("%w: schedule named %q", db.ErrExists, edited.Name)
		}
	}
	for _, c := range []struct{ col, was string }{{"cron_expr", read.CronExpr}, {"timezone", read.Timezone}, {"method", read.Method},
		{"endpoint", read.Endpoint}} {
		w.add(s.d.EqExact(c.col), c.was)
	}
	sets, args := s.scheduleEdit(read, edited)
	res, err := q.ExecContext(ctx, s.d.Bind("UPDATE "+s.schedules()+" SET "+strings.Join(sets, ", ")+w.String()), append(args, w.args...)...)
	if IsUniqueViolation(err) {
		return false, fmt.Errorf("%w: schedule named %q", db.ErrExists, edited.Name)
	}
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// DeleteSchedule deletes a schedule in scope and its runs.
func (s *Store) DeleteSchedule(ctx context.Context, id string) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	w := &where{}
	w.add("id = ?", id)
	s.scope(ctx, w)
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return s.fail("delete schedule "+id, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.schedules()+w.String()), w.args...)
	if err != nil {
		return s.fail("delete schedule "+id, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("%w: schedule %s", db.ErrNotFound, id)
	}
	if _, err := tx.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.scheduleRuns()+" WHERE schedule_id = ?"), id); err != nil {
		return s.fail("delete runs of schedule "+id, err)
	}
	return s.fail("delete schedule "+id, tx.Commit())
}

// DueSchedules lists enabled schedules due at now in (next_run_at, id)
// order, after the cursor.
func (s *Store) DueSchedules(ctx context.Context, now int64, after *db.DueCursor, limit int) ([]db.Schedule, error) {
	w := &where{}
	w.add("enabled = ?", true)
	w.add("next_run_at IS NOT NULL")
	w.add("next_run_at <= ?", now)
	w.add(unlocked, now-db.ScheduleLockGrace)
	if after != nil {
		w.add("(next_run_at > ? OR (next_run_at = ? AND id > ?))", after.NextRunAt, after.NextRunAt, after.ID)
	}
	rows, err := s.r.QueryContext(ctx, s.d.Bind(fmt.Sprintf("SELECT %s FROM %s%s ORDER BY next_run_at, id LIMIT %d",
		scheduleCols, s.schedules(), w.String(), limit)), w.args...)
	if err != nil {
		return nil, s.fail("due schedules", err)
	}
	defer rows.Close()
	out, corrupt, err := decodeRows(rows, []db.Schedule(nil), scanSchedule)
	if err != nil {
		return nil, s.fail("due schedules", err)
	}
	return out, corrupt
}

// unlocked is true of a schedule no other executor has locked within
// db.ScheduleLockGrace of the bound time: Agno's executor sets locked_by
// while it runs a firing and moves next_run_at only when it is done.
const unlocked = "(locked_by IS NULL OR locked_by = '' OR locked_at IS NULL OR locked_at < ?)"

// AdvanceSchedule compare-and-sets next_run_at; to 0 is NULL (never due
// again), as every write of a schedule stores it: a 0 would be due at
// every poll. The stored value matches from when it reads as from:
// SQLite keeps a REAL another writer stored (Python's float, 1780304400.5)
// and reads give it truncated toward zero (looseInt64), so an equality
// with the integer would never hold and the schedule would stay due.
func (s *Store) AdvanceSchedule(ctx context.Context, id string, from, to, at int64) (bool, error) {
	if err := s.gate.enter(ctx); err != nil {
		return false, err
	}
	defer s.gate.leave()
	cond, lo, hi := readsAs("next_run_at", from)
	res, err := s.w.ExecContext(ctx, s.d.Bind("UPDATE "+s.schedules()+" SET next_run_at = ?, updated_at = ? WHERE id = ? AND "+cond+" AND "+unlocked),
		nullInt(to), at, id, lo, hi, at-db.ScheduleLockGrace)
	if err != nil {
		return false, s.fail("advance schedule "+id, err)
	}
	n, err := res.RowsAffected()
	return n > 0, s.fail("advance schedule "+id, err)
}

// readsAs is a condition, with its two arguments, true when integer
// column col holds a number that reads as v, truncated toward zero as
// looseInt64 reads it: the half-open second [v, v+1) (for a negative v,
// (v-1, v]). On Postgres and MySQL, whose BIGINT holds integers only, it
// is col = v; it is a range so that it keeps to col's index.
func readsAs(col string, v int64) (cond string, lo, hi int64) {
	switch {
	case v > 0 && v < math.MaxInt64:
		return col + " >= ? AND " + col + " < ?", v, v + 1
	case v < 0 && v > math.MinInt64:
		return col + " > ? AND " + col + " <= ?", v - 1, v
	case v == 0:
		return col + " > ? AND " + col + " < ?", -1, 1
	}
	return col + " = ? AND " + col + " = ?", v, v
}

// DisableSchedule disables a schedule still enabled with cronExpr and
// timezone, writing only enabled, disabled_reason and updated_at.
func (s *Store) DisableSchedule(ctx context.Context, id, cronExpr, timezone, reason string, at int64) (bool, error) {
	if err := s.gate.enter(ctx); err != nil {
		return false, err
	}
	defer s.gate.leave()
	res, err := s.w.ExecContext(ctx, s.d.Bind("UPDATE "+s.schedules()+" SET enabled = ?, disabled_reason = ?, updated_at = ? "+
		"WHERE id = ? AND enabled = ? AND "+s.d.EqExact("cron_expr")+" AND "+s.d.EqExact("timezone")),
		false, nullStr(reason), at, id, true, cronExpr, timezone)
	if err != nil {
		return false, s.fail("disable schedule "+id, err)
	}
	n, err := res.RowsAffected()
	return n > 0, s.fail("disable schedule "+id, err)
}

// CreateScheduleRun inserts a schedule run; a taken id is db.ErrExists.
func (s *Store) CreateScheduleRun(ctx context.Context, r *db.ScheduleRun) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	inserted, err := s.d.Inserted(s.w.ExecContext(ctx, s.d.Bind(s.d.InsertIgnore(s.scheduleRuns(), splitCols(scheduleRunCols), "id")),
		r.ID, r.ScheduleID, r.Attempt, nullInt(r.TriggeredAt), nullInt(r.CompletedAt), r.Status, nullInt(r.StatusCode), nullStr(r.RunID),
		nullStr(r.SessionID), s.nullText(r.Error), s.jsonArg(r.Input), s.jsonArg(r.Output), s.jsonArg(r.Requirements), nullStr(r.UserID), r.CreatedAt))
	if err != nil {
		return s.fail("create schedule run "+r.ID, err)
	}
	if !inserted {
		return fmt.Errorf("%w: schedule run %s", db.ErrExists, r.ID)
	}
	return nil
}

// GetScheduleRun returns a schedule run in scope or db.ErrNotFound.
func (s *Store) GetScheduleRun(ctx context.Context, id string) (*db.ScheduleRun, error) {
	w := &where{}
	w.add("id = ?", id)
	s.scope(ctx, w)
	r, err := scanScheduleRun(s.r.QueryRowContext(ctx, s.d.Bind("SELECT "+scheduleRunCols+" FROM "+s.scheduleRuns()+w.String()), w.args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: schedule run %s", db.ErrNotFound, id)
	}
	if err != nil {
		return nil, s.fail("get schedule run "+id, err)
	}
	return r, nil
}

// ListScheduleRuns pages schedule runs in scope, newest first.
func (s *Store) ListScheduleRuns(ctx context.Context, f db.ScheduleRunFilter) ([]db.ScheduleRun, int, error) {
	w := &where{}
	w.eq("schedule_id", f.ScheduleID)
	w.eq("status", f.Status)
	if f.TriggeredAt != 0 {
		w.add("triggered_at = ?", f.TriggeredAt)
	}
	if f.Attempt != 0 {
		w.add("attempt = ?", f.Attempt)
	}
	s.scope(ctx, w)
	var total int
	if err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(*) FROM "+s.scheduleRuns()+w.String()), w.args...).Scan(&total); err != nil {
		return nil, 0, s.fail("count schedule runs", err)
	}
	rows, err := s.r.QueryContext(ctx, s.d.Bind(fmt.Sprintf("SELECT %s FROM %s%s ORDER BY created_at DESC, triggered_at DESC, id DESC LIMIT %d OFFSET %d",
		scheduleRunCols, s.scheduleRuns(), w.String(), f.Limit, offset(f.Limit, f.Page))), w.args...)
	if err != nil {
		return nil, 0, s.fail("list schedule runs", err)
	}
	defer rows.Close()
	out, corrupt, err := decodeRows(rows, []db.ScheduleRun{}, scanScheduleRun)
	if err != nil {
		return nil, 0, s.fail("list schedule runs", err)
	}
	return out, total, corrupt
}

// FinishScheduleRun records a running schedule run's outcome.
func (s *Store) FinishScheduleRun(ctx context.Context, r *db.ScheduleRun) (bool, error) {
	return s.updateRunningScheduleRun(ctx, "finish", r.ID, false, "status = ?, completed_at = ?, status_code = ?, error = ?, output = ?, requirements = ?",
		r.Status, r.CompletedAt, nullInt(r.StatusCode), s.nullText(r.Error), s.jsonArg(r.Output), s.jsonArg(r.Requirements))
}

// StartScheduleRun names the run of a running schedule run that has none.
func (s *Store) StartScheduleRun(ctx context.Context, r *db.ScheduleRun) (bool, error) {
	return s.updateRunningScheduleRun(ctx, "start", r.ID, true, "run_id = ?, session_id = ?, input = ?",
		r.RunID, nullStr(r.SessionID), s.jsonArg(r.Input))
}

// updateRunningScheduleRun sets columns of schedule run id in scope while it
// is RUNNING (and, when unnamed, has no run yet); it reports whether the row
// matched.
func (s *Store) updateRunningScheduleRun(ctx context.Context, verb, id string, unnamed bool, set string, args ...any) (bool, error) {
	if err := s.gate.enter(ctx); err != nil {
		return false, err
	}
	defer s.gate.leave()
	w := &where{}
	w.add("id = ?", id)
	w.add("status = ?", db.ScheduleRunRunning)
	if unnamed {
		w.add("run_id IS NULL")
	}
	s.scope(ctx, w)
	res, err := s.w.ExecContext(ctx, s.d.Bind("UPDATE "+s.scheduleRuns()+" SET "+set+w.String()), append(args, w.args...)...)
	if err != nil {
		return false, s.fail(verb+" schedule run "+id, err)
	}
	n, err := res.RowsAffected()
	return n > 0, s.fail(verb+" schedule run "+id, err)
}

func scanSchedule(sc scanner) (*db.Schedule, error) {
	var (
		s                                                                 db.Schedule
		payload                                                           []byte
		desc, lockedBy, user, managed, ttype, tid, cRun, cSess, uRun, uSe sql.NullString
		reason                                                            sql.NullString
		next, lockedAt, updated                                           looseNull
	)
	if err := sc.Scan(&s.ID, &s.Name, &desc, &s.Method, &s.Endpoint, &payload, &s.CronExpr, &s.Timezone, &s.TimeoutSeconds, &s.MaxRetries,
		&s.RetryDelaySeconds, &s.Enabled, &next, &lockedBy, &lockedAt, &user, &managed, &ttype, &tid, &cRun, &cSess, &uRun, &uSe, &reason,
		intCol{&s.CreatedAt}, &updated); err != nil {
		return nil, undecodable("schedules", s.ID, err)
	}
	var err error
	if s.Payload, err = decodeJSON(payload); err != nil {
		return nil, &db.CorruptRowError{Table: "schedules", ID: s.ID, Err: fmt.Errorf("payload: %w", err)}
	}
	s.Description, s.LockedBy, s.UserID, s.ManagedBy, s.TargetType, s.TargetID = desc.String, lockedBy.String, user.String, managed.String, ttype.String, tid.String
	s.CreatedByRunID, s.CreatedBySessionID, s.UpdatedByRunID, s.UpdatedBySessionID, s.DisabledReason = cRun.String, cSess.String, uRun.String, uSe.String, reason.String
	s.NextRunAt, s.LockedAt, s.UpdatedAt = next.Int64, lockedAt.Int64, updated.Int64
	return &s, nil
}

func scanScheduleRun(sc scanner) (*db.ScheduleRun, error) {
	var (
		r                       db.ScheduleRun
		input, output, reqs     []byte
		runID, sess, msg, user  sql.NullString
		triggered, done, status looseNull
	)
	if err := sc.Scan(&r.ID, &r.ScheduleID, &r.Attempt, &triggered, &done, &r.Status, &status, &runID, &sess, &msg, &input, &output, &reqs,
		&user, intCol{&r.CreatedAt}); err != nil {
		return nil, undecodable("schedule_runs", r.ID, err)
	}
	for _, j := range []struct {
		dst *[]byte
		b   []byte
	}{{(*[]byte)(&r.Input), input}, {(*[]byte)(&r.Output), output}, {(*[]byte)(&r.Requirements), reqs}} {
		v, err := decodeJSON(j.b)
		if err != nil {
			return nil, &db.CorruptRowError{Table: "schedule_runs", ID: r.ID, Err: err}
		}
		*j.dst = v
	}
	r.TriggeredAt, r.CompletedAt, r.StatusCode = triggered.Int64, done.Int64, status.Int64
	r.RunID, r.SessionID, r.Error, r.UserID = runID.String, sess.String, msg.String, user.String
	return &r, nil
}
