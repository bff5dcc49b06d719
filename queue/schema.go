package queue

import "github.com/agentryhq/agentry/internal/sqlstore"

// Table names. agno_jobs has Agno 3.0's jobs shape plus two columns Agno's
// reader ignores: engine_job_id (the River job that dispatches the row) and
// cancel_requested_at (a cancel that the worker holding the run has not seen
// yet). agno_job_keys keeps idempotency keys after their job rows are
// deleted by retention; a session delete deletes both (sqlstore).
const (
	jobsTable = sqlstore.JobsTable
	keysTable = sqlstore.JobKeysTable
	// riverQueue is the River queue background runs go through.
	riverQueue = "agentry_runs"
)

// Job statuses (Agno's).
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusPaused    = "paused"
)

// Statuses lists the job statuses, for filters.
var Statuses = []string{StatusQueued, StatusRunning, StatusCompleted, StatusFailed, StatusCancelled, StatusPaused}

// ddl returns the statements creating the queue's own tables; idempotent.
func ddl(dialect string) []string {
	payload := "TEXT"
	if dialect == "postgres" {
		payload = "JSONB"
	}
	return []string{
		`CREATE TABLE IF NOT EXISTS ` + jobsTable + ` (
	id TEXT PRIMARY KEY,
	component_type TEXT NOT NULL,
	job_type TEXT NOT NULL,
	deployment_id TEXT,
	component_id TEXT NOT NULL,
	session_id TEXT NOT NULL,
	user_id TEXT,
	payload ` + payload + ` NOT NULL,
	status TEXT NOT NULL,
	attempt BIGINT NOT NULL,
	max_attempts BIGINT NOT NULL,
	idempotency_key TEXT,
	available_at BIGINT NOT NULL,
	locked_by TEXT,
	locked_at BIGINT,
	error TEXT,
	created_at BIGINT NOT NULL,
	updated_at BIGINT,
	completed_at BIGINT,
	engine_job_id BIGINT,
	cancel_requested_at BIGINT
)`,
		`CREATE INDEX IF NOT EXISTS idx_agno_jobs_status_available_at ON ` + jobsTable + ` (status, available_at)`,
		`CREATE INDEX IF NOT EXISTS idx_agno_jobs_created_at ON ` + jobsTable + ` (created_at)`,
		// Ours, not Agno's: a listing by status reads it in created_at
		// order (instead of sorting every job of that status), and the
		// stats count the jobs of each status from it alone.
		`CREATE INDEX IF NOT EXISTS idx_agno_jobs_status_created_at ON ` + jobsTable + ` (status, created_at)`,
		`CREATE INDEX IF NOT EXISTS idx_agno_jobs_session_id ON ` + jobsTable + ` (session_id)`,
		`CREATE INDEX IF NOT EXISTS idx_agno_jobs_component_id ON ` + jobsTable + ` (component_id)`,
		`CREATE INDEX IF NOT EXISTS idx_agno_jobs_user_id ON ` + jobsTable + ` (user_id)`,
		// Ours, not Agno's: a user's page (GET /queue/jobs with user
		// isolation on) reads the user's jobs in created_at order instead
		// of sorting all of them (idx_agno_jobs_user_id has no created_at).
		`CREATE INDEX IF NOT EXISTS idx_agno_jobs_user_id_created_at ON ` + jobsTable + ` (user_id, created_at)`,
		`CREATE TABLE IF NOT EXISTS ` + keysTable + ` (
	user_id TEXT NOT NULL,
	idempotency_key TEXT NOT NULL,
	run_id TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	PRIMARY KEY (user_id, idempotency_key)
)`,
	}
}

// rebind turns ? placeholders into $n for Postgres.
func rebind(dialect, q string) string {
	if dialect != "postgres" {
		return q
	}
	return sqlstore.RebindDollar(q)
}
