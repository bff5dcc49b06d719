package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

var (
	_ db.PipedRunsSaver     = (*Store)(nil)
	_ db.PipedSessionReader = (*Store)(nil)
)

// SaveRunsPiped implements db.PipedRunsSaver: pre, then each write's own
// statements, session lock (when a run_index is to be assigned), session
// upsert and run upsert (saveRunPipelined's), all in one Pipeline: BEGIN
// and the statements in one round trip, COMMIT in a second. A write whose
// statement's Row fails (its own, or its session or run refused) is named
// in a *db.PipedWriteError; the whole group is rolled back either way.
//
// A write whose conditional session write (Session.Expect) the stored row
// refuses fails the group as a *db.PipedWriteError naming it, with the
// reason the row as stored then gives (db.ErrSessionChanged, or
// db.ErrNotFound for another user's row); when the row holds the expected
// value in another form, the group is sent again expecting that form.
func (s *Store) SaveRunsPiped(ctx context.Context, pre []db.PipedStmt, ws []db.PipedRunWrite) error {
	if !s.pipelines() {
		return db.ErrNotPiped
	}
	var expected []any // each write's compared value; nil: none is conditional
	for i, w := range ws {
		if w.Session == nil || !conditional(w.Session) {
			continue
		}
		v, ok := s.casExpected(w.Session.Expect)
		if !ok {
			sw, _ := s.sessionWrite(w.Ctx, w.Session)
			var err error
			if v, err = s.casRefusal(w.Ctx, poolConn{s}, sw); err != nil {
				return &db.PipedWriteError{Index: i, Err: err}
			}
		}
		if expected == nil {
			expected = make([]any, len(ws))
		}
		expected[i] = v
	}
	for try := 1; ; try++ {
		err := s.saveRunsPipedOnce(ctx, pre, ws, expected)
		var pe *db.PipedWriteError
		if !errors.As(err, &pe) || !errors.Is(pe.Err, errCasRefused) {
			return err
		}
		w := ws[pe.Index]
		sw, _ := s.sessionWrite(w.Ctx, w.Session)
		v, rerr := s.casRefusal(w.Ctx, poolConn{s}, sw)
		switch {
		case rerr != nil:
			return &db.PipedWriteError{Index: pe.Index, Err: rerr}
		case try == casTries:
			return &db.PipedWriteError{Index: pe.Index, Err: fmt.Errorf("%w: session %s", db.ErrSessionChanged, sw.SessionID)}
		}
		expected[pe.Index] = v
	}
}

// saveRunsPipedOnce is SaveRunsPiped's one pipeline, each conditional
// session write comparing its expected value; a refused one is a
// *db.PipedWriteError wrapping errCasRefused.
func (s *Store) saveRunsPipedOnce(ctx context.Context, pre []db.PipedStmt, ws []db.PipedRunWrite, expected []any) error {
	var (
		failed *db.PipedWriteError
		stmts  = make([]PipelineStmt, 0, len(pre)+5*len(ws))
	)
	// piped turns a caller's statement into the pipeline's; write >= 0
	// names the write its Row's failure is blamed on.
	piped := func(p db.PipedStmt, write int) PipelineStmt {
		st := PipelineStmt{Query: p.Query, Args: p.Args}
		if p.Row != nil {
			st.Row = func(sc Scanner) error {
				err := p.Row(sc)
				if err != nil && write >= 0 && failed == nil {
					failed = &db.PipedWriteError{Index: write, Err: err}
				}
				return err
			}
		}
		return st
	}
	for _, p := range pre {
		stmts = append(stmts, piped(p, -1))
	}
	for i, w := range ws {
		for _, p := range w.Pre {
			stmts = append(stmts, piped(p, i))
		}
		out, scoped := runToWrite(w.Ctx, w.Run)
		tail := len(stmts) // this write's session part starts here
		var exp any
		if expected != nil {
			exp = expected[i]
		}
		sw, lock, sq, sargs := s.pipedSessionPart(w.Ctx, w.Session, out, exp)
		if lock {
			stmts = append(stmts, PipelineStmt{Query: s.lockSessionQ, Args: []any{out.SessionID}})
		}
		if sw != nil {
			stmts = append(stmts, PipelineStmt{Query: sq, Args: sargs, Row: func(sc Scanner) error {
				_, err := s.scanPipedSession(sc, sw)
				if err != nil && failed == nil {
					failed = &db.PipedWriteError{Index: i, Err: err}
				}
				return err
			}})
		}
		in := w.Run
		stmts = append(stmts, PipelineStmt{Query: s.upsertRunSQL(scoped), Args: s.upsertRunArgs(out), Row: func(sc Scanner) error {
			err := scanUpsertedRun(sc, out, s.returnsKept())
			if err != nil && failed == nil {
				err = s.runWriteErr(in, err)
				failed = &db.PipedWriteError{Index: i, Err: err}
			}
			return err
		}})
		stmts[tail].Session = out.SessionID
	}
	err := s.d.Pipeline(ctx, s.w, stmts)
	switch {
	case err == nil:
		return nil
	case failed != nil:
		return failed
	}
	return s.fail("save runs", err)
}

var _ db.PipedRunMover = (*Store)(nil)

// RunningStmt implements db.PipedRunMover on a dialect that pipelines
// (Postgres, run_data JSONB): the status column and run_data's "status" set
// to RUNNING in place when the row is PENDING or RUNNING, as a read, a
// decode, a status change and an upsert of the whole row would (run_data
// keeps every other member, updated_at is left as it was), then the row's
// status and run_index (which the run's later saves then need not assign:
// db.WithRunIndex). The outer SELECT sees the row as the statement began,
// so a moved row answers through the CTE's RETURNING.
func (s *Store) RunningStmt(runID string, status func(st run.Status, runIndex *int64)) (db.PipedStmt, bool) {
	if !s.pipelines() {
		return db.PipedStmt{}, false
	}
	running := string(run.StatusRunning)
	return db.PipedStmt{
		Query: "WITH moved AS (UPDATE " + s.runs + " SET status = ?, run_data = jsonb_set(run_data, '{status}', to_jsonb(?::text)) WHERE run_id = ? AND status IN (?, ?) RETURNING status, run_index) " +
			"SELECT COALESCE((SELECT status FROM moved), (SELECT status FROM " + s.runs + " WHERE run_id = ?), ''), " +
			"COALESCE((SELECT run_index FROM moved), (SELECT run_index FROM " + s.runs + " WHERE run_id = ?))",
		Args: []any{running, running, runID, string(run.StatusPending), running, runID, runID},
		Row: func(sc interface{ Scan(...any) error }) error {
			var st string
			var idx sql.NullInt64
			if err := sc.Scan(&st, &idx); err != nil {
				return err
			}
			var ip *int64
			if idx.Valid {
				ip = &idx.Int64
			}
			status(run.Status(st), ip)
			return nil
		},
	}, true
}

// SessionOfRunStmt is db.PipedSessionReader: the session row of runID's
// session, read in the durable claim's pipelined batch. A missing row or one
// that does not decode passes nothing; it never fails the claim over that.
func (s *Store) SessionOfRunStmt(runID string, got func(*db.Session)) (db.PipedStmt, bool) {
	if !s.pipelines() {
		return db.PipedStmt{}, false
	}
	return db.PipedStmt{
		Query: "SELECT " + sessionCols + " FROM " + s.sessions + " WHERE session_id = (SELECT session_id FROM " + s.runs + " WHERE run_id = ?)",
		Args:  []any{runID},
		Row: func(sc interface{ Scan(...any) error }) error {
			out, err := scanSession(sc)
			var corrupt *db.CorruptRowError
			switch {
			case err == nil:
				got(out)
			case errors.Is(err, sql.ErrNoRows), errors.As(err, &corrupt):
			default:
				return err
			}
			return nil
		},
	}, true
}
