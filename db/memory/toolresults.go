package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/agentryhq/agentry/db"
)

// UpsertToolResult inserts or replaces an index row by result_id; under a
// user scope another user's row is not replaced (db.ErrNotFound).
func (d *Driver) UpsertToolResult(ctx context.Context, r *db.ToolResult) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if old, ok := d.toolResults[r.ResultID]; ok && !visible(ctx, old.UserID) {
		return fmt.Errorf("%w: tool result %s", db.ErrNotFound, r.ResultID)
	}
	cp := *r
	d.toolResults[r.ResultID] = &cp
	return nil
}

// GetToolResult returns an index row in scope or db.ErrNotFound.
func (d *Driver) GetToolResult(ctx context.Context, resultID string) (*db.ToolResult, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r, ok := d.toolResults[resultID]
	if !ok || !visible(ctx, r.UserID) {
		return nil, fmt.Errorf("%w: tool result %s", db.ErrNotFound, resultID)
	}
	cp := *r
	return &cp, nil
}

// ListToolResults returns a session's rows in scope, newest first.
func (d *Driver) ListToolResults(ctx context.Context, sessionID string, limit int) ([]db.ToolResult, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []db.ToolResult
	for _, r := range d.toolResults {
		if r.SessionID == sessionID && visible(ctx, r.UserID) {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(a, b db.ToolResult) int {
		return cmp.Or(cmp.Compare(b.CreatedAt, a.CreatedAt), cmp.Compare(b.ResultID, a.ResultID))
	})
	return out[:min(limit, len(out))], nil
}

// DeleteToolResult deletes a row in scope.
func (d *Driver) DeleteToolResult(ctx context.Context, resultID string) error {
	unlock, err := d.write(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if r, ok := d.toolResults[resultID]; ok && visible(ctx, r.UserID) {
		delete(d.toolResults, resultID)
	}
	return nil
}

// ExpiredToolResults returns rows past their expiry, oldest first.
func (d *Driver) ExpiredToolResults(ctx context.Context, now int64, limit int) ([]db.ToolResult, error) {
	unlock, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var out []db.ToolResult
	for _, r := range d.toolResults {
		if r.ExpiresAt != 0 && r.ExpiresAt < now && visible(ctx, r.UserID) {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(a, b db.ToolResult) int {
		return cmp.Or(cmp.Compare(a.ExpiresAt, b.ExpiresAt), cmp.Compare(a.ResultID, b.ResultID))
	})
	return out[:min(limit, len(out))], nil
}
