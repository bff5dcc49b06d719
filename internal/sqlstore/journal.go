package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

var _ db.StepJournalDriver = (*Store)(nil)

// fenceKey is the step key of a run's fence row: its attempt is the highest
// attempt that wrote to the run's journal. Step keys are never empty.
const fenceKey = ""

const stepCols = "run_id, step_key, kind, attempt, status, request, result, created_at, updated_at"

// fence raises the run's fence to attempt and locks it until c commits, or
// fails with run.ErrFenced when a newer attempt holds it. The raise never
// lowers the attempt; the row lock it takes (SQLite's single writer is
// serial anyway) keeps a newer attempt from raising it until this
// transaction ends, so a step write of this transaction cannot land after a
// newer attempt's.
//
// With ON CONFLICT it is one statement (one round trip on Postgres): the
// upsert rewrites the row when its attempt is not newer (locking it) and
// returns it; it returns nothing, and locks nothing, when a newer attempt
// holds the fence. MySQL raises with GREATEST, then reads the attempt back
// with FOR UPDATE.
func (s *Store) fence(ctx context.Context, c txConn, runID string, attempt int, now int64) error {
	t := s.steps
	if s.d.Upsert != OnDuplicateKey {
		// Executed, not queried: the row count says whether it raised (or
		// kept) the fence, without reading a row back.
		res, err := c.exec(ctx, s.fenceRaiseSQL(), runID, fenceKey, attempt, now, now)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		// Refused (rare): the read says by which attempt.
		var cur int
		if err := c.queryRow(ctx, "SELECT attempt FROM "+t+" WHERE run_id = ? AND step_key = ?", runID, fenceKey).Scan(&cur); err != nil {
			return err
		}
		return fmt.Errorf("%w: run %s is at attempt %d, this is attempt %d", run.ErrFenced, runID, cur, attempt)
	}
	q := "INSERT INTO " + t + " (" + stepCols + ") VALUES (?, ?, 'fence', ?, 'done', NULL, NULL, ?, ?)" +
		" ON DUPLICATE KEY UPDATE attempt = GREATEST(attempt, VALUES(attempt))"
	if _, err := c.exec(ctx, q, runID, fenceKey, attempt, now, now); err != nil {
		return err
	}
	var cur int
	if err := c.queryRow(ctx, "SELECT attempt FROM "+t+" WHERE run_id = ? AND step_key = ? FOR UPDATE", runID, fenceKey).Scan(&cur); err != nil {
		return err
	}
	if cur > attempt {
		return fmt.Errorf("%w: run %s is at attempt %d, this is attempt %d", run.ErrFenced, runID, cur, attempt)
	}
	return nil
}

var _ db.PipedStepFencer = (*Store)(nil)

// FenceStmt implements db.PipedStepFencer: fence's upsert, whose missing
// row is run.ErrFenced (ok false on MySQL: two statements there).
func (s *Store) FenceStmt(runID string, attempt int, now int64) (db.PipedStmt, bool) {
	if s.d.Upsert == OnDuplicateKey {
		return db.PipedStmt{}, false
	}
	return db.PipedStmt{Query: s.fenceUpsertSQL(), Args: []any{runID, fenceKey, attempt, now, now},
		Row: func(sc interface{ Scan(...any) error }) error {
			var cur int
			if err := sc.Scan(&cur); errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: run %s is at a newer attempt than %d", run.ErrFenced, runID, attempt)
			} else if err != nil {
				return err
			}
			return nil
		}}, true
}

// ClearStmt implements db.PipedStepFencer.
func (s *Store) ClearStmt(runID string) db.PipedStmt {
	return db.PipedStmt{Query: "DELETE FROM " + s.steps + " WHERE run_id = ?", Args: []any{runID}}
}

// CountStepsStmt implements db.PipedStepFencer.
func (s *Store) CountStepsStmt(runID string, count func(n int)) db.PipedStmt {
	return db.PipedStmt{Query: "SELECT count(*) FROM " + s.steps + " WHERE run_id = ? AND step_key <> ?", Args: []any{runID, fenceKey},
		Row: func(sc interface{ Scan(...any) error }) error {
			var n int
			if err := sc.Scan(&n); err != nil {
				return err
			}
			count(n)
			return nil
		}}
}

// fenceUpsertSQL raises a fence row's attempt unless a newer one holds it,
// returning the row only when it did (ON CONFLICT dialects).
func (s *Store) fenceUpsertSQL() string {
	return s.fenceRaiseSQL() + " RETURNING attempt"
}

// fenceRaiseSQL is fenceUpsertSQL without its RETURNING: it changes one row
// when it raised (or kept) the fence, none when a newer attempt holds it.
func (s *Store) fenceRaiseSQL() string {
	return "INSERT INTO " + s.steps + " AS f (" + stepCols + ") VALUES (?, ?, 'fence', ?, 'done', NULL, NULL, ?, ?)" +
		" ON CONFLICT (run_id, step_key) DO UPDATE SET attempt = excluded.attempt WHERE f.attempt <= excluded.attempt"
}

// journalTx runs fn in a fenced write transaction, retrying a deadlock the
// backend resolved (RetryTx). On SQLite the transaction is the group
// commit's, shared with the concurrent run writes and journal steps (each
// in a savepoint of its own: a fence that refuses fails this write alone),
// instead of a commit and a WAL append of its own per step; it returns once
// the group committed. fn may run again in a fresh transaction when a
// batch-mate broke the group: it must not keep state from a run that
// returned nil.
func (s *Store) journalTx(ctx context.Context, runID string, attempt int, now int64, fn func(c txConn) error) error {
	if s.gate != nil {
		wctx := s.gated(ctx) // the gate's holder runs the statements (see gated)
		err := s.grouped(ctx, func(_ context.Context, c txConn) error {
			if err := stepFence(wctx, c); err != nil {
				return err
			}
			if err := s.fence(wctx, c, runID, attempt, now); err != nil {
				return err
			}
			return fn(c)
		})
		if err == nil || errors.Is(err, run.ErrFenced) || errors.Is(err, ctx.Err()) {
			return err
		}
		return s.fail("journal of run "+runID, err)
	}
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	for try := 1; ; try++ {
		err := s.inTx(ctx, func(c txConn) error {
			if err := stepFence(ctx, c); err != nil {
				return err
			}
			if err := s.fence(ctx, c, runID, attempt, now); err != nil {
				return err
			}
			return fn(c)
		})
		if err == nil || errors.Is(err, run.ErrFenced) {
			return err
		}
		if s.d.RetryTx == nil || try == 4 || !s.d.RetryTx(err) {
			return s.fail("journal of run "+runID, err)
		}
	}
}

// stepFence runs the caller's fence of a step write (db.StepWriteFence:
// the durable queue's job fence) in c, before the journal's fence: the
// journal's fence row holds an attempt number, which a run id enqueued again
// after its session was deleted shares with the deleted run's attempt; the
// job fence tells them apart by their engine job. It takes the job row
// before the fence row, the order of the queue's claim and final save.
func stepFence(ctx context.Context, c txConn) error {
	if f := db.StepWriteFence(ctx); f != nil {
		return f(ctx, c.tx)
	}
	return nil
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

func scanStep(sc interface{ Scan(...any) error }) (*db.RunStep, error) {
	var st db.RunStep
	var req, res sql.NullString
	if err := sc.Scan(&st.RunID, &st.StepKey, &st.Kind, &st.Attempt, &st.Status, &req, &res, &st.CreatedAt, &st.UpdatedAt); err != nil {
		return nil, err
	}
	if req.Valid {
		st.Request = json.RawMessage(req.String)
	}
	if res.Valid {
		st.Result = json.RawMessage(res.String)
	}
	return &st, nil
}

// BeginStep implements db.StepJournalDriver.
func (s *Store) BeginStep(ctx context.Context, in *db.RunStep, idempotent bool) (*db.RunStep, error) {
	var out *db.RunStep
	err := s.journalTx(ctx, in.RunID, in.Attempt, in.UpdatedAt, func(c txConn) error {
		out = nil // a group that broke runs the write again
		old, err := scanStep(c.queryRow(ctx, "SELECT "+stepCols+" FROM "+s.steps+" WHERE run_id = ? AND step_key = ?", in.RunID, in.StepKey))
		switch {
		case errors.Is(err, sql.ErrNoRows):
			_, err = c.exec(ctx, "INSERT INTO "+s.steps+" ("+stepCols+") VALUES (?, ?, ?, ?, ?, ?, NULL, ?, ?)",
				in.RunID, in.StepKey, in.Kind, in.Attempt, db.StepStarted, nullJSON(in.Request), in.CreatedAt, in.UpdatedAt)
			return err
		case err != nil:
			return err
		case old.Status == db.StepDone || !idempotent:
			out = old
			return nil
		}
		_, err = c.exec(ctx, "UPDATE "+s.steps+" SET attempt = ?, status = ?, request = ?, result = NULL, updated_at = ? WHERE run_id = ? AND step_key = ?",
			in.Attempt, db.StepStarted, nullJSON(in.Request), in.UpdatedAt, in.RunID, in.StepKey)
		return err
	})
	return out, err
}

// GetStep implements db.StepJournalDriver.
func (s *Store) GetStep(ctx context.Context, runID, stepKey string) (*db.RunStep, int, error) {
	rows, err := s.r.QueryContext(ctx, s.d.Bind("SELECT "+stepCols+" FROM "+s.steps+" WHERE run_id = ? AND step_key IN (?, ?)"), runID, stepKey, fenceKey)
	if err != nil {
		return nil, 0, s.fail("get run step", err)
	}
	defer rows.Close()
	var out *db.RunStep
	fence := 0
	for rows.Next() {
		st, err := scanStep(rows)
		if err != nil {
			return nil, 0, s.fail("get run step", err)
		}
		if st.StepKey == fenceKey {
			fence = st.Attempt
		} else {
			out = st
		}
	}
	return out, fence, s.fail("get run step", rows.Err())
}

// FinishStep implements db.StepJournalDriver.
func (s *Store) FinishStep(ctx context.Context, in *db.RunStep) error {
	return s.journalTx(ctx, in.RunID, in.Attempt, in.UpdatedAt, func(c txConn) error {
		if s.d.Upsert == OnConflict {
			// One statement: a step recorded without a "started" mark
			// (an idempotent one) is new; a started one keeps its
			// request and created_at.
			_, err := c.exec(ctx, "INSERT INTO "+s.steps+" ("+stepCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"+
				" ON CONFLICT (run_id, step_key) DO UPDATE SET attempt = excluded.attempt, status = excluded.status,"+
				" result = excluded.result, updated_at = excluded.updated_at",
				in.RunID, in.StepKey, in.Kind, in.Attempt, db.StepDone, nullJSON(in.Request), nullJSON(in.Result), in.CreatedAt, in.UpdatedAt)
			return err
		}
		res, err := c.exec(ctx, "UPDATE "+s.steps+" SET attempt = ?, status = ?, result = ?, updated_at = ? WHERE run_id = ? AND step_key = ?",
			in.Attempt, db.StepDone, nullJSON(in.Result), in.UpdatedAt, in.RunID, in.StepKey)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		_, err = c.exec(ctx, "INSERT INTO "+s.steps+" ("+stepCols+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
			in.RunID, in.StepKey, in.Kind, in.Attempt, db.StepDone, nullJSON(in.Request), nullJSON(in.Result), in.CreatedAt, in.UpdatedAt)
		return err
	})
}

// RunSteps implements db.StepJournalDriver.
func (s *Store) RunSteps(ctx context.Context, runID string) ([]db.RunStep, error) {
	rows, err := s.r.QueryContext(ctx, s.d.Bind("SELECT "+stepCols+" FROM "+s.steps+" WHERE run_id = ? AND step_key <> ? ORDER BY step_key"), runID, fenceKey)
	if err != nil {
		return nil, s.fail("run steps", err)
	}
	defer rows.Close()
	var out []db.RunStep
	for rows.Next() {
		st, err := scanStep(rows)
		if err != nil {
			return nil, s.fail("run steps", err)
		}
		out = append(out, *st)
	}
	return out, s.fail("run steps", rows.Err())
}

// ClearRunSteps implements db.StepJournalDriver.
func (s *Store) ClearRunSteps(ctx context.Context, runID string) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	_, err := s.w.ExecContext(ctx, s.d.Bind("DELETE FROM "+s.steps+" WHERE run_id = ?"), runID)
	return s.fail("clear run steps", err)
}

var _ db.TxStepFencer = (*Store)(nil)

// FenceTx implements db.TxStepFencer: the fence of every journal write, in
// the caller's transaction on the writer (SaveRunWith's).
func (s *Store) FenceTx(ctx context.Context, tx *sql.Tx, runID string, attempt int, now int64) error {
	return s.fence(ctx, txConn{s: s, tx: tx}, runID, attempt, now)
}

// ClearRunStepsTx implements db.TxStepFencer: ClearRunSteps in tx.
func (s *Store) ClearRunStepsTx(ctx context.Context, tx *sql.Tx, runID string) error {
	_, err := txConn{s: s, tx: tx}.exec(ctx, "DELETE FROM "+s.steps+" WHERE run_id = ?", runID)
	return err
}
