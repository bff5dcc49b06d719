package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

const jobColumns = `id, component_type, job_type, deployment_id, component_id, session_id, user_id, payload, status, attempt, max_attempts,
	idempotency_key, available_at, locked_by, locked_at, error, created_at, updated_at, completed_at, engine_job_id`

type scanner interface{ Scan(dest ...any) error }

// scanJob reads jobColumns (and cancel_requested_at when withCancel).
func (q *Queue) scanJob(row scanner, withCancel bool) (*claimedJob, error) {
	var j claimedJob
	var dep, user, key, by, errText sql.NullString
	var lockedAt, updatedAt, completedAt, engineID, cancelAt sql.NullInt64
	var payload []byte
	dest := []any{&j.ID, &j.ComponentType, &j.JobType, &dep, &j.ComponentID, &j.SessionID, &user, &payload, &j.Status, &j.Attempt, &j.MaxAttempts,
		&key, &j.AvailableAt, &by, &lockedAt, &errText, &j.CreatedAt, &updatedAt, &completedAt, &engineID}
	if withCancel {
		dest = append(dest, &cancelAt)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	j.DeploymentID, j.UserID, j.IdempotencyKey, j.LockedBy, j.Error = dep.String, user.String, key.String, by.String, errText.String
	j.LockedAt, j.UpdatedAt, j.CompletedAt, j.engineID = lockedAt.Int64, updatedAt.Int64, completedAt.Int64, engineID.Int64
	j.Payload = append([]byte(nil), payload...)
	j.CancelRequested = cancelAt.Valid
	return &j, nil
}

// Filter selects jobs for List. Limit is required (> 0); Page starts at 1.
type Filter struct {
	// Status, when set, is one of Statuses.
	Status string
	// UserID, when Scoped, limits the jobs to this user's.
	UserID string
	Scoped bool
	Limit  int
	Page   int
}

// ErrBadFilter: an unknown status or a bad page.
var ErrBadFilter = errors.New("queue: bad filter")

// ListCountAhead bounds List's count: it counts the jobs up to the end of
// the page and at most this many past it.
const ListCountAhead = 10000

// List returns a page of jobs, newest first, and their total count.
//
// The total is exact when fewer than ListCountAhead jobs follow the page;
// past that it is the page's end plus ListCountAhead, a lower bound that
// still says a next page exists, so that no page costs a count of the
// whole table (the jobs of a day of runs: retention keeps them). Stats
// counts every job by status. A page that is not full ends the listing and
// needs no count.
func (q *Queue) List(ctx context.Context, f Filter) (_ []Job, _ int, err error) {
	ctx, done := q.d.Bound(ctx)
	defer func() { err = done(err) }()
	if f.Limit < 1 || f.Page < 1 {
		return nil, 0, fmt.Errorf("%w: limit and page must be at least 1", ErrBadFilter)
	}
	if f.Status != "" && !slices.Contains(Statuses, f.Status) {
		return nil, 0, fmt.Errorf("%w: status must be one of %v", ErrBadFilter, Statuses)
	}
	if f.Page-1 > math.MaxInt64/f.Limit {
		return nil, 0, fmt.Errorf("%w: page is too large", ErrBadFilter)
	}
	offset := (f.Page - 1) * f.Limit
	bound := math.MaxInt64 // the count's: saturated
	if offset <= math.MaxInt64-f.Limit-ListCountAhead {
		bound = offset + f.Limit + ListCountAhead
	}
	where, args := listWhere(f)
	rows, err := q.w.QueryContext(ctx, q.listQuery(where), append(args, f.Limit, offset)...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	jobs := []Job{}
	for rows.Next() {
		j, err := q.scanJob(rows, false)
		if err != nil {
			return nil, 0, err
		}
		jobs = append(jobs, j.Job)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if len(jobs) < f.Limit && (len(jobs) > 0 || offset == 0) {
		return jobs, offset + len(jobs), nil
	}
	var total int
	if err := q.w.QueryRowContext(ctx, q.countQuery(where), append(args, bound)...).Scan(&total); err != nil {
		return nil, 0, err
	}
	return jobs, total, nil
}

// listQuery is List's page of the jobs where holds (arguments: where's,
// the limit, the offset). Filtered by status, it reads
// idx_agno_jobs_status_created_at in order.
func (q *Queue) listQuery(where string) string {
	return q.sql(`SELECT ` + jobColumns + ` FROM ` + q.jobs + ` WHERE ` + where + ` ORDER BY created_at DESC, id LIMIT ? OFFSET ?`)
}

// countQuery counts the jobs where holds, up to a bound (its last
// argument): List's total.
func (q *Queue) countQuery(where string) string {
	return q.sql(`SELECT COUNT(*) FROM (SELECT 1 FROM ` + q.jobs + ` WHERE ` + where + ` LIMIT ?) AS matching`)
}

// listWhere is List's condition and its arguments.
func listWhere(f Filter) (string, []any) {
	where, args := "1 = 1", []any{}
	if f.Status != "" {
		where += " AND status = ?"
		args = append(args, f.Status)
	}
	if f.Scoped {
		cond, uargs := userIs(f.UserID)
		where += " AND " + cond
		args = append(args, uargs...)
	}
	return where, args
}

// userIs is the condition that a job is userID's ("": a job without a
// user, whose user_id is NULL or empty). It compares the column itself, not
// an expression of it, so that idx_agno_jobs_user_id serves a scoped listing
// instead of a scan of every job.
func userIs(userID string) (string, []any) {
	if userID == "" {
		return "(user_id IS NULL OR user_id = '')", nil
	}
	return "user_id = ?", []any{userID}
}

// Get returns one job; a scoped caller gets ErrNotFound for another user's.
func (q *Queue) Get(ctx context.Context, id, userID string, scoped bool) (_ *Job, err error) {
	ctx, done := q.d.Bound(ctx)
	defer func() { err = done(err) }()
	j, err := q.scanJob(q.w.QueryRowContext(ctx, q.sql(`SELECT `+jobColumns+` FROM `+q.jobs+` WHERE id = ?`), id), false)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, ErrNotFound
	case err != nil:
		return nil, err
	case scoped && j.UserID != userID:
		return nil, ErrNotFound
	}
	return &j.Job, nil
}

// Stats counts jobs by status.
type Stats struct {
	Queued    int `json:"queued"`
	Running   int `json:"running"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	Paused    int `json:"paused"`
	// OldestQueuedAgeSeconds is how long the longest-waiting queued job
	// has been able to run without a worker taking it: now minus the
	// earliest available_at of the queued jobs whose available_at has come
	// (0: none). A job that waits out its retry delay is not counted
	// until the delay ends, and a requeued job counts from its requeue,
	// not from its creation, so the figure measures the queue's backlog.
	OldestQueuedAgeSeconds int64 `json:"oldest_queued_age_seconds"`
}

// Stats counts the jobs (a scoped caller's own).
func (q *Queue) Stats(ctx context.Context, userID string, scoped bool) (_ Stats, err error) {
	ctx, done := q.d.Bound(ctx)
	defer func() { err = done(err) }()
	where, cond, uargs := "", "", []any{}
	if scoped {
		c, a := userIs(userID)
		where, cond, uargs = " WHERE "+c, " AND "+c, a
	}
	rows, err := q.w.QueryContext(ctx, q.statsQuery(where), uargs...)
	if err != nil {
		return Stats{}, err
	}
	defer rows.Close()
	var st Stats
	for rows.Next() {
		var status string
		var n int
		if err := rows.Scan(&status, &n); err != nil {
			return Stats{}, err
		}
		switch status {
		case StatusQueued:
			st.Queued = n
		case StatusRunning:
			st.Running = n
		case StatusCompleted:
			st.Completed = n
		case StatusFailed:
			st.Failed = n
		case StatusCancelled:
			st.Cancelled = n
		case StatusPaused:
			st.Paused = n
		}
	}
	if err := rows.Err(); err != nil {
		return Stats{}, err
	}
	if st.Queued == 0 {
		return st, nil
	}
	now := time.Now().Unix()
	var oldest sql.NullInt64
	if err := q.w.QueryRowContext(ctx, q.oldestQuery(cond), append([]any{StatusQueued, now}, uargs...)...).Scan(&oldest); err != nil {
		return Stats{}, err
	}
	if oldest.Valid {
		st.OldestQueuedAgeSeconds = max(0, now-oldest.Int64)
	}
	return st, nil
}

// statsQuery counts the jobs of each status (where: "" or a WHERE
// clause). Unscoped, idx_agno_jobs_status_created_at holds all it reads.
func (q *Queue) statsQuery(where string) string {
	return q.sql(`SELECT status, COUNT(*) FROM ` + q.jobs + where + ` GROUP BY status`)
}

// oldestQuery is the earliest available_at of the queued jobs that may
// run now (arguments: the queued status, now, then cond's). Unscoped it is
// the first entry of idx_agno_jobs_status_available_at's range.
func (q *Queue) oldestQuery(cond string) string {
	return q.sql(`SELECT MIN(available_at) FROM ` + q.jobs + ` WHERE status = ? AND available_at <= ?` + cond)
}
