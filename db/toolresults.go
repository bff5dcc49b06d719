package db

import (
	"context"
	"fmt"
	"unicode/utf8"
)

// ToolResult is one row of the offload index (agno_tool_results): where an
// offloaded tool result's content lives (a file at Namespace/Path) and whose
// it is. The user scope applies to it through UserID.
type ToolResult struct {
	ResultID    string
	Namespace   string
	Path        string
	SessionID   string
	RunID       string
	ToolCallID  string
	ToolName    string
	ArgsHash    string
	ContentType string
	SizeBytes   int64
	LineCount   int64
	Preview     string
	UserID      string
	CreatedAt   int64
	// ExpiresAt is when a sweep may delete the result (Unix seconds); 0 never.
	ExpiresAt int64
}

// ToolResultDriver stores the offload index. Reads and deletes apply the
// context's user scope inside their queries.
type ToolResultDriver interface {
	// UpsertToolResult inserts an index row or replaces the one with the same
	// result_id (a repeated tool call stores again under its stable id).
	UpsertToolResult(ctx context.Context, r *ToolResult) error
	// GetToolResult returns a row or ErrNotFound.
	GetToolResult(ctx context.Context, resultID string) (*ToolResult, error)
	// ListToolResults returns a session's rows, newest first, at most limit.
	ListToolResults(ctx context.Context, sessionID string, limit int) ([]ToolResult, error)
	// DeleteToolResult deletes a row; a missing one is not an error.
	DeleteToolResult(ctx context.Context, resultID string) error
	// ExpiredToolResults returns up to limit rows whose expires_at is set
	// and before now, oldest first.
	ExpiredToolResults(ctx context.Context, now int64, limit int) ([]ToolResult, error)
}

// MaxToolResultID bounds result ids (MySQL indexes VARCHAR(255)).
const MaxToolResultID = 255

func checkResultID(id string) error {
	if id == "" || len(id) > MaxToolResultID || !utf8.ValidString(id) {
		return fmt.Errorf("%w: a tool result id is 1 to %d bytes of UTF-8", ErrInvalidRecord, MaxToolResultID)
	}
	return checkNotPadded("tool result id", id)
}

// UpsertToolResult validates and stores an index row; created_at is set
// when zero. A user scope must match the row's user.
func (d *DB) UpsertToolResult(ctx context.Context, r *ToolResult) error {
	if r == nil {
		return fmt.Errorf("%w: nil tool result", ErrInvalidRecord)
	}
	if err := checkResultID(r.ResultID); err != nil {
		return err
	}
	if err := checkFileKey(r.Namespace, r.Path); err != nil {
		return err
	}
	if u, ok := UserScope(ctx); ok && r.UserID != u {
		return fmt.Errorf("%w: tool result of user %q written in the scope of user %q", ErrInvalidRecord, r.UserID, u)
	}
	if err := checkUserID("tool result", r.ResultID, r.UserID); err != nil {
		return err
	}
	cp := *r
	if cp.CreatedAt == 0 {
		cp.CreatedAt = d.now().Unix()
	}
	ctx, call := d.bound(ctx)
	return call.done(d.driver.UpsertToolResult(ctx, &cp))
}

// GetToolResult returns an index row or ErrNotFound (also for another
// user's row under a user scope).
func (d *DB) GetToolResult(ctx context.Context, resultID string) (*ToolResult, error) {
	if err := checkResultID(resultID); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	ctx, call := d.bound(ctx)
	out, err := d.driver.GetToolResult(ctx, resultID)
	return out, call.done(err)
}

// ListToolResults returns a session's index rows, newest first.
func (d *DB) ListToolResults(ctx context.Context, sessionID string, limit int) ([]ToolResult, error) {
	if sessionID == "" {
		return nil, fmt.Errorf("%w: listing tool results needs a session id", ErrInvalidFilter)
	}
	if limit <= 0 {
		return nil, fmt.Errorf("%w: limit must be positive, got %d", ErrInvalidFilter, limit)
	}
	ctx, call := d.bound(ctx)
	out, err := d.driver.ListToolResults(ctx, sessionID, limit)
	return out, call.done(err)
}

// DeleteToolResult deletes an index row (not its file).
func (d *DB) DeleteToolResult(ctx context.Context, resultID string) error {
	if err := checkResultID(resultID); err != nil {
		return err
	}
	ctx, call := d.bound(ctx)
	return call.done(d.driver.DeleteToolResult(ctx, resultID))
}

// ExpiredToolResults returns index rows past their expiry, oldest first.
func (d *DB) ExpiredToolResults(ctx context.Context, now int64, limit int) ([]ToolResult, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("%w: limit must be positive, got %d", ErrInvalidFilter, limit)
	}
	ctx, call := d.bound(ctx)
	out, err := d.driver.ExpiredToolResults(ctx, now, limit)
	return out, call.done(err)
}
