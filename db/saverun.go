package db

import (
	"context"
	"fmt"
)

// RunSaver is an optional Driver ability: storing a run and its session in
// one transaction. A run is the end of a conversation turn and usually
// changes its session too (updated_at, session_state); one transaction
// instead of two halves the commits (SQLite's WAL frames and its single
// writer connection are the server's bottleneck).
type RunSaver interface {
	// SaveRun upserts s exactly as UpsertSession would, then r exactly as
	// UpsertRun would, atomically: when either fails nothing is written.
	// r belongs to s (same session_id).
	SaveRun(ctx context.Context, s *Session, r *Run) (*Session, *Run, error)
}

// SaveRun validates and stores a session and one of its runs, with the same
// checks, scope and timestamps as UpsertSession and UpsertRun. A nil s stores
// the run alone. Drivers that implement RunSaver write both in one
// transaction; others get the two calls in order (the session first, since
// the run references it), and a failed run write then leaves the session
// written.
func (d *DB) SaveRun(ctx context.Context, s *Session, r *Run) (*Session, *Run, error) {
	if s == nil {
		out, err := d.UpsertRun(ctx, r)
		return nil, out, err
	}
	sc, err := d.sessionToWrite(ctx, s)
	if err != nil {
		return nil, nil, err
	}
	rc, err := d.runToWrite(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	if rc.SessionID != sc.SessionID {
		return nil, nil, fmt.Errorf("%w: run %s is in session %s, not %s", ErrInvalidRecord, rc.RunID, rc.SessionID, sc.SessionID)
	}
	ctx, done := d.bound(ctx)
	if d.saver != nil {
		so, ro, err := d.saver.SaveRun(ctx, sc, rc)
		return so, ro, done(err)
	}
	so, err := d.driver.UpsertSession(ctx, sc)
	if err != nil {
		return nil, nil, done(err)
	}
	ro, err := d.driver.UpsertRun(ctx, rc)
	if err != nil {
		return nil, nil, done(err)
	}
	return so, ro, done(nil)
}
