package queue

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/riverqueue/river"

	"github.com/agentryhq/agentry/db"
)

// MaxIdempotencyKey is the longest Idempotency-Key accepted.
const MaxIdempotencyKey = 512

// ErrKeyTooLong: the idempotency key is longer than MaxIdempotencyKey.
var ErrKeyTooLong = fmt.Errorf("queue: the idempotency key is longer than %d characters", MaxIdempotencyKey)

// existing carries the run id an idempotency key already names out of the
// enqueue transaction (which it rolls back).
type existing struct{ runID string }

func (e *existing) Error() string { return "queue: idempotency key already used by run " + e.runID }

// Enqueue commits the run's PENDING row r (with its session s when s is not
// nil) and j, its job, in one transaction. j.ID must be r's run id; Status,
// Attempt, MaxAttempts and the timestamps are set here. With an idempotency
// key already used by j.UserID it stores nothing and returns the run id the
// key names (dup true): keys are kept for good (a session delete deletes
// its runs' keys: a repeat then runs anew). Past MaxQueueDepth queued
// jobs it fails with ErrQueueFull.
//
// On Postgres concurrent enqueues share one transaction, sent in one round
// trip and committed in a second (enqueueGroup); each still commits with its
// job or not at all, and gets its own answer.
func (q *Queue) Enqueue(ctx context.Context, s *db.Session, r *db.Run, j *Job) (runID string, dup bool, err error) {
	if utf8.RuneCountInString(j.IdempotencyKey) > MaxIdempotencyKey {
		return "", false, ErrKeyTooLong
	}
	if j.RetryDelay < 0 || (j.RetryDelay > 0 && j.RetryDelay%time.Second != 0) {
		return "", false, fmt.Errorf("queue: a job's retry delay must be whole seconds, not %s", j.RetryDelay)
	}
	if j.ID != r.RunID {
		return "", false, fmt.Errorf("queue: job id %s is not the run's id %s", j.ID, r.RunID)
	}
	if j.JobType == "" {
		j.JobType = "run"
	}
	if j.DeploymentID == "" {
		j.DeploymentID = q.cfg.DeploymentID
	}
	if len(j.Payload) == 0 {
		j.Payload = []byte("{}")
	}
	now := unixNow()
	j.Status, j.Attempt, j.MaxAttempts = StatusQueued, 0, q.cfg.MaxAttempts
	j.AvailableAt, j.CreatedAt, j.UpdatedAt = now, now, now
	if q.group != nil && db.WriteFence(ctx) == nil {
		// Postgres: with the concurrent enqueues, in one piped
		// transaction; anything but the common case comes back here.
		switch err := q.group.enqueue(ctx, s, r, j); {
		case err == nil:
			return j.ID, false, nil
		case !errors.Is(err, errAlone):
			return "", false, err
		}
	}
	return q.enqueueTx(ctx, s, r, j)
}

// enqueueTx is Enqueue's transaction made statement by statement: the key
// (a repeat returns the first run), the depth, the key's row, River's job
// (InsertTx) and the agno_jobs row, then the session and the run. It
// decides every case (a repeated key, a full queue, a refused write) and
// says why.
func (q *Queue) enqueueTx(ctx context.Context, s *db.Session, r *db.Run, j *Job) (runID string, dup bool, err error) {
	with := func(ctx context.Context, tx *sql.Tx) error {
		if j.IdempotencyKey != "" {
			var first string
			err := tx.QueryRowContext(ctx, q.sql(`SELECT run_id FROM `+q.keys+` WHERE user_id = ? AND idempotency_key = ?`), j.UserID, j.IdempotencyKey).Scan(&first)
			switch {
			case err == nil:
				return &existing{first}
			case !errors.Is(err, sql.ErrNoRows):
				return err
			}
		}
		// Counting stops at the limit: the cost of a deep queue's count is
		// bounded by MaxQueueDepth, not by the backlog.
		var queued int
		if err := tx.QueryRowContext(ctx, q.sql(q.depthQuery), StatusQueued, q.cfg.MaxQueueDepth).Scan(&queued); err != nil {
			return err
		}
		if queued >= q.cfg.MaxQueueDepth {
			return ErrQueueFull
		}
		if j.IdempotencyKey != "" {
			if _, err := tx.ExecContext(ctx, q.sql(`INSERT INTO `+q.keys+` (user_id, idempotency_key, run_id, created_at) VALUES (?, ?, ?, ?)`),
				j.UserID, j.IdempotencyKey, j.ID, j.CreatedAt); err != nil {
				return err
			}
		}
		if q.dialect == "sqlite" {
			return q.insertJobSQLite(ctx, tx, j)
		}
		res, err := q.client.InsertTx(ctx, tx, runArgs{RunID: j.ID, RetryDelay: int64(j.RetryDelay / time.Second)}, &river.InsertOpts{Queue: riverQueue, MaxAttempts: q.cfg.MaxAttempts})
		if err != nil {
			return fmt.Errorf("queue: insert river job: %w", err)
		}
		_, err = tx.ExecContext(ctx, q.sql(`INSERT INTO `+q.jobs+` (`+jobInsertCols+`)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`), append(jobInsertArgs(make([]any, 0, 16), j), res.Job.ID)...)
		return err
	}
	_, _, err = q.d.SaveRunWith(ctx, s, r, with)
	var ex *existing
	switch {
	case errors.As(err, &ex):
		return ex.runID, true, nil
	case err != nil && j.IdempotencyKey != "" && isUniqueViolation(err):
		// A concurrent request with the same key committed first.
		var first string
		if rerr := q.w.QueryRowContext(ctx, q.sql(`SELECT run_id FROM `+q.keys+` WHERE user_id = ? AND idempotency_key = ?`), j.UserID, j.IdempotencyKey).Scan(&first); rerr == nil {
			return first, true, nil
		}
		return "", false, err
	case err != nil:
		return "", false, err
	}
	if q.group != nil {
		q.group.depth.added(1) // the group's estimate of the depth
	}
	return j.ID, false, nil
}

// jobInsertCols are the agno_jobs columns an enqueue writes, in
// jobInsertArgs's order, engine_job_id last.
const jobInsertCols = `id, component_type, job_type, deployment_id, component_id, session_id, user_id, payload,
	status, attempt, max_attempts, idempotency_key, available_at, created_at, updated_at, engine_job_id`

// jobInsertArgs appends j's values of jobInsertCols but engine_job_id to dst.
func jobInsertArgs(dst []any, j *Job) []any {
	return append(dst, j.ID, j.ComponentType, j.JobType, nullable(j.DeploymentID), j.ComponentID, j.SessionID, nullable(j.UserID), string(j.Payload),
		j.Status, j.Attempt, j.MaxAttempts, nullable(j.IdempotencyKey), j.AvailableAt, j.CreatedAt, j.UpdatedAt)
}

// isUniqueViolation recognises a duplicate key on SQLite and Postgres.
func isUniqueViolation(err error) bool {
	s := err.Error()
	return strings.Contains(s, "UNIQUE constraint failed") || strings.Contains(s, "23505") || strings.Contains(s, "duplicate key")
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
