package db

import (
	"context"
	"encoding/json"
	"fmt"
)

// HistoryRef is a history run as a run's context needs it: which run, as
// stored when, and its run_data (nil when HistoryQuery.Cached names it
// unchanged). It is a quarter of a Run's size; a long conversation reads
// every earlier run on every turn.
type HistoryRef struct {
	RunID     string
	UpdatedAt int64
	RunData   json.RawMessage
}

// HistoryRefReader is the optional ability of a driver to return the
// history (see RunDriver.HistoryRuns) as refs, without building full rows.
type HistoryRefReader interface {
	HistoryRefs(ctx context.Context, q HistoryQuery) ([]HistoryRef, error)
}

// SessionHistoryRefReader is the optional ability of a driver to answer
// SessionHistoryRefs itself: the session and its history as refs in one
// statement, without reading or building the runs' other columns.
type SessionHistoryRefReader interface {
	// SessionHistoryRefs is SessionHistory (same errors, same runs in the
	// same order) with the runs reduced to refs.
	SessionHistoryRefs(ctx context.Context, q HistoryQuery) (*Session, []HistoryRef, error)
}

// HistoryRefs is HistoryRuns reduced to refs: from the driver when it has
// the ability, else taken from its rows.
func (d *DB) HistoryRefs(ctx context.Context, q HistoryQuery) ([]HistoryRef, error) {
	hr, ok := d.driver.(HistoryRefReader)
	if !ok {
		rows, err := d.HistoryRuns(ctx, q)
		if err != nil {
			return nil, err
		}
		return refsOf(rows), nil
	}
	if q.SessionID == "" {
		return nil, fmt.Errorf("%w: session_id is required", ErrInvalidFilter)
	}
	if q.Limit <= 0 {
		return nil, fmt.Errorf("%w: limit must be positive, got %d", ErrInvalidFilter, q.Limit)
	}
	ctx, call := d.bound(ctx)
	out, err := hr.HistoryRefs(ctx, q)
	return out, call.done(err)
}

// SessionHistoryRefs is SessionHistory with the runs as refs: one statement
// where the driver has SessionHistoryRefReader or SessionHistoryReader, else GetSession then
// HistoryRefs (an in-process driver's refs share its run_data).
func (d *DB) SessionHistoryRefs(ctx context.Context, q HistoryQuery) (*Session, []HistoryRef, error) {
	if sr, ok := d.driver.(SessionHistoryRefReader); ok {
		if q.SessionID == "" {
			return nil, nil, fmt.Errorf("%w: session_id is required", ErrInvalidFilter)
		}
		if q.Limit <= 0 {
			return nil, nil, fmt.Errorf("%w: limit must be positive, got %d", ErrInvalidFilter, q.Limit)
		}
		ctx, call := d.bound(ctx)
		s, refs, err := sr.SessionHistoryRefs(ctx, q)
		return s, refs, call.done(err)
	}
	if _, ok := d.driver.(SessionHistoryReader); ok {
		s, rows, err := d.SessionHistory(ctx, q)
		return s, refsOf(rows), err
	}
	if q.SessionID == "" {
		return nil, nil, fmt.Errorf("%w: session_id is required", ErrInvalidFilter)
	}
	s, err := d.GetSession(ctx, q.SessionID)
	if err != nil {
		return s, nil, err
	}
	refs, err := d.HistoryRefs(ctx, q)
	return s, refs, err
}

// refsOf reduces rows to refs.
func refsOf(rows []Run) []HistoryRef {
	if rows == nil {
		return nil
	}
	refs := make([]HistoryRef, len(rows))
	for i := range rows {
		refs[i] = HistoryRef{RunID: rows[i].RunID, UpdatedAt: rows[i].UpdatedAt, RunData: rows[i].RunData}
	}
	return refs
}
