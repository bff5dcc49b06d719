package sqlstore

import (
	"context"
	"fmt"

	"github.com/agentryhq/agentry/db"
)

var (
	_ db.RunSaver      = (*Store)(nil)
	_ db.TxRunSaver    = (*Store)(nil)
	_ db.SQLWriter     = (*Store)(nil)
	_ db.PipedRunSaver = (*Store)(nil)
)

// SQLWriter returns the writer pool and the dialect's name.
func (s *Store) SQLWriter() db.WriterPool {
	return db.WriterPool{DB: s.w, Dialect: s.d.Name, Schema: s.d.Schema}
}

// SaveRunWith is SaveRun (sess may be nil) with the caller's statements run
// first inside the same transaction; their error rolls everything back and
// is returned as is.
func (s *Store) SaveRunWith(ctx context.Context, sess *db.Session, in *db.Run, with db.TxFunc) (*db.Session, *db.Run, error) {
	// The gate is entered by the group that holds the write (groupCommit).
	ctx = s.gated(ctx)
	for attempt := 1; ; attempt++ {
		saved, out, err := s.saveRunWith(ctx, sess, in, with)
		if err == nil || s.d.RetryTx == nil || attempt == 4 || !s.d.RetryTx(err) {
			return saved, out, err
		}
	}
}

// SaveRun upserts a session and then one of its runs in one transaction on
// the writer (on SQLite shared with concurrent run writes: groupCommit), with the statements of UpsertSession and UpsertRun: one commit
// instead of two (on SQLite one BEGIN IMMEDIATE on the single writer
// connection). When either write is refused (another user's session or run)
// or the process dies between them, nothing is written: a session row never
// says a run happened that is not stored.
//
// Postgres takes the session's advisory lock first when a run_index is to be
// assigned, as UpsertRun does. MySQL locks the session row first, so that
// its session INSERT (refused when the row exists) does not take a shared
// lock it then has to upgrade; two transactions creating the same new
// session can still deadlock (InnoDB rolls one back), and that one is
// retried.
func (s *Store) SaveRun(ctx context.Context, sess *db.Session, in *db.Run) (*db.Session, *db.Run, error) {
	ctx = s.gated(ctx)
	for attempt := 1; ; attempt++ {
		saved, out, err := s.saveRunWith(ctx, sess, in, nil)
		if err == nil || s.d.RetryTx == nil || attempt == 4 || !s.d.RetryTx(err) {
			return saved, out, err
		}
	}
}

func (s *Store) saveRunWith(ctx context.Context, sess *db.Session, in *db.Run, with db.TxFunc) (*db.Session, *db.Run, error) {
	if err := s.checkRunData(in); err != nil {
		return nil, nil, err
	}
	if with == nil && s.pipelines() {
		return s.saveRunPipelined(ctx, sess, in, nil)
	}
	out, scoped := runToWrite(ctx, in)
	s.warmWriter(ctx, s.upsertSessionSQL(), s.upsertRunSQL(scoped))
	var (
		saved  *db.Session
		mapped error // a failed write, already mapped like UpsertSession's or UpsertRun's
	)
	write := func(ctx context.Context, c txConn) error {
		saved, mapped = nil, nil // a group that broke runs the write again
		if with != nil {
			if err := with(ctx, c.tx); err != nil {
				mapped = err
				return err
			}
		}
		if s.d.RunUpsert == RunUpsertLockReadWrite || (s.d.RunUpsert == RunUpsertLockThenWrite && out.RunIndex == nil) {
			if err := s.lockSession(ctx, c, out.SessionID); err != nil {
				return err
			}
		}
		if sess != nil {
			if saved, mapped = s.upsertSession(ctx, c, sess); mapped != nil {
				return mapped
			}
		}
		var err error
		if s.d.RunUpsert == RunUpsertLockReadWrite {
			err = s.upsertRunLocked(ctx, c, out, scoped)
		} else {
			err = s.upsertRunOnConflict(ctx, c, out, scoped)
		}
		if err != nil {
			mapped = s.runWriteErr(in, err)
			return mapped
		}
		if with == nil {
			// What the history cache applies once the group commits;
			// a write with the caller's statements stays unknown to it.
			c.fx.add(runEffect{sess: saved, run: out})
		}
		return nil
	}
	var err error
	if s.gate != nil {
		// SQLite: one transaction with the concurrent run writes.
		err = s.grouped(ctx, write)
	} else {
		err = s.inTx(ctx, func(c txConn) error { return write(ctx, c) })
	}
	switch {
	case mapped != nil:
		return nil, nil, mapped
	case err != nil:
		return nil, nil, s.fail("save run "+in.RunID, err)
	}
	return saved, out, nil
}

// saveRunPipelined is saveRunWith on a dialect with a Pipeline (Postgres):
// the advisory lock (only when a run_index is to be assigned), the session
// upsert and the run upsert go out together instead of one round trip each.
// Without caller statements (pre) and with the dialect's Batch they are one
// round trip, an implicit transaction (the run upsert after a session's
// fails on a refusal, which rolls the session's write back: see
// buildUpsertRunAfterSessionSQL); otherwise BEGIN goes with them and COMMIT,
// or ROLLBACK after a refusal, in a second.
//
// A conditional session write (sess.Expect) that the stored row refuses
// fails the transaction; the row as stored then says why (casRefusal),
// and when it holds the expected value in another form the save is sent
// again expecting that form.
func (s *Store) saveRunPipelined(ctx context.Context, sess *db.Session, in *db.Run, pre []db.PipedStmt) (*db.Session, *db.Run, error) {
	if sess == nil || !conditional(sess) {
		return s.saveRunPipelinedOnce(ctx, sess, in, pre, nil)
	}
	w, _ := s.sessionWrite(ctx, sess)
	var saved *db.Session
	var out *db.Run
	err := s.casRetry(ctx, poolConn{s}, w, func(expected any, _ bool) error {
		var err error
		saved, out, err = s.saveRunPipelinedOnce(ctx, sess, in, pre, expected)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return saved, out, nil
}

// saveRunPipelinedOnce is saveRunPipelined's one pipeline, a conditional
// session write comparing expected; errCasRefused when it was refused.
func (s *Store) saveRunPipelinedOnce(ctx context.Context, sess *db.Session, in *db.Run, pre []db.PipedStmt, expected any) (*db.Session, *db.Run, error) {
	out, scoped := runToWrite(ctx, in)
	var (
		saved   *db.Session
		mapped  error
		stmts   = make([]PipelineStmt, 0, 3+len(pre))
		oneTrip = len(pre) == 0 && s.d.Batch != nil
	)
	for _, p := range pre {
		st := PipelineStmt{Query: p.Query, Args: p.Args}
		if p.Row != nil {
			st.Row = func(sc Scanner) error { return p.Row(sc) }
		}
		stmts = append(stmts, st)
	}
	tail := len(stmts) // the session part starts here
	w, lock, sq, sargs := s.pipedSessionPart(ctx, sess, out, expected)
	if lock {
		stmts = append(stmts, PipelineStmt{Query: s.lockSessionQ, Args: []any{out.SessionID}})
	}
	runQ, runArgs := s.upsertRunSQL(scoped), s.upsertRunArgs(out)
	if w != nil {
		stmts = append(stmts, PipelineStmt{Query: sq, Args: sargs, Row: func(sc Scanner) error {
			saved, mapped = s.scanPipedSession(sc, w)
			return mapped
		}})
		if oneTrip {
			runQ, runArgs = s.afterSessionQ[0], append(runArgs, w.SessionID, nullStr(w.UserID))
			if scoped {
				runQ = s.afterSessionQ[1]
			}
		}
	}
	stmts = append(stmts, PipelineStmt{Query: runQ, Args: runArgs, Row: func(sc Scanner) error {
		err := scanUpsertedRun(sc, out, s.returnsKept())
		if runRefused(err) { // the session's refusal is reported by its own row
			err = fmt.Errorf("%w: run %s", db.ErrNotFound, out.RunID)
		}
		if err != nil {
			mapped = s.runWriteErr(in, err)
			return mapped
		}
		return nil
	}})
	stmts[tail].Session = out.SessionID
	var err error
	if oneTrip {
		err = s.d.Batch(ctx, s.w, stmts)
	} else {
		err = s.d.Pipeline(ctx, s.w, stmts)
	}
	switch {
	case mapped != nil:
		return nil, nil, mapped
	case err != nil:
		return nil, nil, s.fail("save run "+in.RunID, err)
	}
	return saved, out, nil
}

// PipesRunWrites implements db.PipedRunSaver.
func (s *Store) PipesRunWrites() bool { return s.pipelines() }

// pipelines: the dialect sends a run's write in one round trip with BEGIN.
func (s *Store) pipelines() bool {
	return s.d.Pipeline != nil && s.d.RunUpsert == RunUpsertLockThenWrite && s.d.Upsert == OnConflict
}

// SaveRunPiped implements db.PipedRunSaver: saveRunPipelined with pre's
// statements first (a durable queue's fences), or db.ErrNotPiped.
func (s *Store) SaveRunPiped(ctx context.Context, sess *db.Session, in *db.Run, pre []db.PipedStmt) (*db.Session, *db.Run, error) {
	if !s.pipelines() {
		return nil, nil, db.ErrNotPiped
	}
	return s.saveRunPipelined(ctx, sess, in, pre)
}
