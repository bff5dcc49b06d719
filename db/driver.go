package db

import "context"

// SessionDriver stores sessions. Every method applies the context's user scope
// (UserScope) inside its queries.
type SessionDriver interface {
	// UpsertSession inserts or updates a session and returns the stored row. An
	// update only applies where the stored user_id equals the caller's (scope or
	// record) or is NULL; otherwise ErrNotFound.
	UpsertSession(ctx context.Context, s *Session) (*Session, error)
	GetSession(ctx context.Context, sessionID string) (*Session, error)
	// ListSessions returns one page and the total count of matching sessions.
	// A row that cannot be decoded (another writer's: text that is not JSON,
	// a timestamp that is not an integer) is left out of the page and
	// reported as a *CorruptRowError joined to the error, next to the rows
	// that did decode; GetRuns and ListMemories do the same.
	ListSessions(ctx context.Context, f SessionFilter) ([]Session, int, error)
	// DeleteSessions deletes the sessions in scope and, in the same
	// transaction, their runs (by cascade), their runs' step journals and
	// approvals, their offloaded tool results (the ToolResult rows naming
	// them and the files those rows point at), their traces with their
	// spans, and what other packages keep of them in the same database when
	// its tables exist (the durable queue's agno_jobs rows and idempotency
	// keys, the runs' agentry_run_events). Their schedule runs stay without
	// their run and session ids and the run's input, output and
	// requirements; one running or paused is failed with the error
	// ScheduleRunSessionDeleted.
	// Missing ids and other users' sessions are ignored, and nothing of
	// theirs is touched.
	DeleteSessions(ctx context.Context, sessionIDs ...string) error
}

// RunDriver stores runs, one row each.
type RunDriver interface {
	// UpsertRun inserts or updates ONE run row and returns it with its run_index.
	// On conflict it updates status, run_data, user_id, parent_run_id and
	// updated_at and keeps the existing run_index; a missing run_index is assigned
	// max+1 within the session atomically (safe under concurrent writers).
	UpsertRun(ctx context.Context, r *Run) (*Run, error)
	GetRun(ctx context.Context, runID string) (*Run, error)
	// GetRuns returns one page; the count is the total when f.WithTotal, else -1.
	// An undecodable row is left out and reported as in ListSessions.
	GetRuns(ctx context.Context, f RunFilter) ([]Run, int, error)
	// HistoryRuns returns the bounded context history (see HistoryQuery).
	HistoryRuns(ctx context.Context, q HistoryQuery) ([]Run, error)
	DeleteRun(ctx context.Context, runID string) error
}

// MemoryDriver stores user memories.
type MemoryDriver interface {
	UpsertMemory(ctx context.Context, m *Memory) (*Memory, error)
	GetMemory(ctx context.Context, memoryID string) (*Memory, error)
	// ListMemories returns one page and the total count; an undecodable row
	// is left out and reported as in ListSessions.
	ListMemories(ctx context.Context, f MemoryFilter) ([]Memory, int, error)
	DeleteMemories(ctx context.Context, memoryIDs ...string) error
	// MemoryTopics lists distinct topics in scope, sorted.
	MemoryTopics(ctx context.Context) ([]string, error)
	// UserMemoryStats pages per-user counts, most recently updated first.
	UserMemoryStats(ctx context.Context, limit, page int) ([]UserMemoryStats, int, error)
}

// Driver is a storage backend. Optional abilities are separate interfaces
// discovered by type assertion.
type Driver interface {
	SessionDriver
	RunDriver
	MemoryDriver
	FileDriver
	ToolResultDriver
	ApprovalDriver
	// Dialect names the backend: "sqlite", "postgres", "mysql" or "memory".
	Dialect() string
	Close() error
}
