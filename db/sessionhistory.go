package db

import (
	"context"
	"fmt"
)

// SessionHistoryReader is an optional Driver ability: a session and its
// history runs in one statement (one round trip) instead of GetSession and
// HistoryRuns.
type SessionHistoryReader interface {
	// SessionHistory returns the session q.SessionID in scope (ErrNotFound
	// when absent; an error, as GetSession's, when its row does not decode)
	// and q's history runs as HistoryRuns returns them.
	SessionHistory(ctx context.Context, q HistoryQuery) (*Session, []Run, error)
}

// SessionHistory returns a session and the last q.Limit context runs of it,
// oldest first: what a turn loads before it calls the model. Drivers with
// SessionHistoryReader answer in one statement; for others it is GetSession
// then HistoryRuns. A missing session is ErrNotFound, with no runs.
func (d *DB) SessionHistory(ctx context.Context, q HistoryQuery) (*Session, []Run, error) {
	if q.SessionID == "" {
		return nil, nil, fmt.Errorf("%w: session_id is required", ErrInvalidFilter)
	}
	if q.Limit <= 0 {
		return nil, nil, fmt.Errorf("%w: limit must be positive, got %d", ErrInvalidFilter, q.Limit)
	}
	if sh, ok := d.driver.(SessionHistoryReader); ok {
		ctx, call := d.bound(ctx)
		s, runs, err := sh.SessionHistory(ctx, q)
		return s, runs, call.done(err)
	}
	s, err := d.GetSession(ctx, q.SessionID)
	if err != nil {
		return s, nil, err
	}
	runs, err := d.HistoryRuns(ctx, q)
	return s, runs, err
}
