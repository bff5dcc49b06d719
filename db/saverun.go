package db

import (
	"context"
	"errors"
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
// written. Like UpsertRun, a write that fails with ErrUnavailable is checked
// once and is a success when the run was stored after all.
func (d *DB) SaveRun(ctx context.Context, s *Session, r *Run) (*Session, *Run, error) {
	if writeFence(ctx) != nil {
		return d.SaveRunWith(ctx, s, r, nil)
	}
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
		return nil, nil, errSessionMismatch(rc, sc)
	}
	bctx, call := d.bound(ctx)
	var so *Session
	var ro *Run
	if d.saver != nil {
		so, ro, err = d.saver.SaveRun(bctx, sc, rc)
	} else if so, err = d.driver.UpsertSession(bctx, sc); err == nil {
		ro, err = d.driver.UpsertRun(bctx, rc)
	}
	if err = call.done(err); err == nil || !errors.Is(err, ErrUnavailable) {
		return so, ro, err
	}
	if stored, ok := d.landed(ctx, rc); ok {
		if so, serr := d.GetSession(ctx, rc.SessionID); serr == nil {
			return so, stored, nil
		}
	}
	return nil, nil, err
}

// landed reports, after a run write failed with ErrUnavailable, whether it
// was stored after all: a connection can be lost after the database
// committed and before it acknowledged, and a caller told the run was not
// stored would say so to its client. One read, within its own bound; the
// row is ours when it carries the status and updated_at just written.
func (d *DB) landed(ctx context.Context, r *Run) (*Run, bool) {
	got, err := d.GetRun(ctx, r.RunID)
	if err != nil || got.Status != r.Status || got.UpdatedAt != r.UpdatedAt || got.SessionID != r.SessionID {
		return nil, false
	}
	return got, true
}

// errSessionMismatch is the error of a save whose run is not in its session.
func errSessionMismatch(r *Run, s *Session) error {
	return fmt.Errorf("%w: run %s is in session %s, not %s", ErrInvalidRecord, r.RunID, r.SessionID, s.SessionID)
}
