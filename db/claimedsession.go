package db

import (
	"context"
	"sync/atomic"
)

// claimedSessionKey holds the session row a durable claim read
// (WithClaimedSession).
type claimedSessionKey struct{}

type claimedSession struct {
	runID string
	s     *Session
	mark  uint64
	taken atomic.Bool
}

// WithClaimedSession returns ctx carrying s, the row of runID's session as
// the durable queue's claim read it in its own transaction (Postgres: a
// statement of the claim's pipelined batch). The run's first load of its
// session (ClaimedSession) takes it instead of reading the row again: one
// round trip fewer for every background run. It is the row as of the
// claim, which the run's own load would have read a moment later with no
// lock either.
func WithClaimedSession(ctx context.Context, runID string, s *Session) context.Context {
	return WithClaimedSessionAt(ctx, runID, s, 0)
}

// WithClaimedSessionAt is WithClaimedSession with the mark the claimer took
// before its read (a number the reader of the row compares with what was
// written since, in the process's session lines; 0: none taken).
func WithClaimedSessionAt(ctx context.Context, runID string, s *Session, mark uint64) context.Context {
	if s == nil {
		return ctx
	}
	return context.WithValue(ctx, claimedSessionKey{}, &claimedSession{runID: runID, s: s, mark: mark})
}

// ClaimedSessionMark is the mark WithClaimedSessionAt put in ctx with
// runID's claimed session row (0: none).
func ClaimedSessionMark(ctx context.Context, runID string) uint64 {
	if c, _ := ctx.Value(claimedSessionKey{}).(*claimedSession); c != nil && c.runID == runID {
		return c.mark
	}
	return 0
}

// ClaimedSession hands out, once, the session row WithClaimedSession put in
// ctx for runID when it is sessionID's and visible to ctx's user scope (a
// row of another user is not handed out: the caller's own read then answers
// ErrNotFound, as for any read). ok false: read the session.
func ClaimedSession(ctx context.Context, runID, sessionID string) (s *Session, ok bool) {
	c, _ := ctx.Value(claimedSessionKey{}).(*claimedSession)
	if c == nil || c.runID != runID || c.s.SessionID != sessionID {
		return nil, false
	}
	if u, scoped := UserScope(ctx); scoped && u != "" && c.s.UserID != u {
		return nil, false
	}
	if !c.taken.CompareAndSwap(false, true) {
		return nil, false
	}
	return c.s, true
}

// PipedSessionReader is an optional Driver ability (Postgres): a statement
// that reads the session row of a run, for the durable queue's pipelined
// claim (WithClaimedSession).
type PipedSessionReader interface {
	// SessionOfRunStmt reads the session row of runID's session and passes
	// it to got; a run or session that is missing, or a row that does not
	// decode, passes nothing (the run reads its session itself). ok false:
	// the driver has no such statement.
	SessionOfRunStmt(runID string, got func(*Session)) (st PipedStmt, ok bool)
}

// SessionOfRunStmt is the driver's PipedSessionReader statement, unscoped
// (the durable queue's claim acts for no user: ClaimedSession applies the
// run's scope); ok false when it has none.
func (d *DB) SessionOfRunStmt(runID string, got func(*Session)) (PipedStmt, bool) {
	r, ok := d.driver.(PipedSessionReader)
	if !ok {
		return PipedStmt{}, false
	}
	return r.SessionOfRunStmt(runID, got)
}
