package db

import (
	"context"
	"errors"
	"fmt"
)

// PipedRunWrite is one run write of SaveRunsPiped: a session (nil: none)
// and one of its runs, with statements of the caller's (Pre) run before
// them in the shared transaction.
type PipedRunWrite struct {
	// Ctx is the writing caller's context: its user scope applies to this
	// write (checks and the scoped upserts), as in SaveRun. A context that
	// carries a write fence cannot be grouped (ErrNotPiped).
	Ctx     context.Context
	Session *Session
	Run     *Run
	// Pre runs first; a Row that fails fails this write (PipedWriteError).
	Pre []PipedStmt
}

// PipedWriteError says which write of a SaveRunsPiped failed the group (a
// Row of its statements, or its session or run write refused): nothing of
// the group was written.
type PipedWriteError struct {
	Index int
	Err   error
}

func (e *PipedWriteError) Error() string {
	return fmt.Sprintf("db: piped write %d: %v", e.Index, e.Err)
}
func (e *PipedWriteError) Unwrap() error { return e.Err }

// PipedRunsSaver is an optional Driver ability (Postgres): several callers'
// run writes (each as SaveRun, with its own statements first) in one
// transaction sent in one pgx batch with BEGIN, COMMIT in a second round
// trip. pre runs first, once for the group. All or nothing: any failure
// rolls the whole group back (a *PipedWriteError when one write's
// statement failed). ErrNotPiped when the dialect cannot.
type PipedRunsSaver interface {
	SaveRunsPiped(ctx context.Context, pre []PipedStmt, ws []PipedRunWrite) error
}

// SaveRunsPiped stores ws (validated as SaveRun validates, each under its
// own Ctx's scope) in one transaction with pre's statements first, sent in
// one round trip and committed in a second: the durable queue's group
// commit of concurrent enqueues on Postgres. On any error nothing is
// written. ErrNotPiped: the driver cannot (or a write's context carries a
// write fence); the caller writes them one by one.
func (d *DB) SaveRunsPiped(ctx context.Context, pre []PipedStmt, ws []PipedRunWrite) error {
	ps, ok := d.driver.(PipedRunsSaver)
	if !ok {
		return ErrNotPiped
	}
	checked := make([]PipedRunWrite, len(ws))
	for i, w := range ws {
		if w.Ctx == nil {
			return &PipedWriteError{i, errors.New("db: a piped write needs its caller's context")}
		}
		if writeFence(w.Ctx) != nil {
			return ErrNotPiped
		}
		c := w
		if w.Session != nil {
			s, err := d.sessionToWrite(w.Ctx, w.Session)
			if err != nil {
				return &PipedWriteError{i, err}
			}
			c.Session = s
		}
		r, err := d.runToWrite(w.Ctx, w.Run)
		if err != nil {
			return &PipedWriteError{i, err}
		}
		if c.Session != nil && r.SessionID != c.Session.SessionID {
			return &PipedWriteError{i, fmt.Errorf("%w: run %s is in session %s, not %s", ErrInvalidRecord, r.RunID, r.SessionID, c.Session.SessionID)}
		}
		c.Run = r
		checked[i] = c
	}
	bctx, call := d.bound(ctx)
	return call.done(ps.SaveRunsPiped(bctx, pre, checked))
}
