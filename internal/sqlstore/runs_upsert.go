package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/agentryhq/agentry/db"
)

// UpsertRun inserts one run row, or updates status, run_data, user_id,
// parent_run_id and updated_at of an existing one, keeping its run_index. A
// nil run_index becomes max+1 within the session; assignment is serialised per
// session. A scoped caller cannot overwrite another user's run (ErrNotFound).
//
// The dialect's RunUpsert picks the algorithm. SQLite and Postgres use one
// INSERT … ON CONFLICT … RETURNING whose run_index is a MAX subquery. On
// SQLite (RunUpsertOneStatement) the statement alone is atomic: it holds the
// write lock from its first step and all writes go through one connection.
// Postgres (RunUpsertLockThenWrite) takes an advisory transaction lock on the
// session in the statement before, because a READ COMMITTED statement reads
// with the snapshot it started with and would miss a run committed while it
// waited on a lock of its own. MySQL's ON DUPLICATE KEY UPDATE has neither a
// guard clause nor RETURNING, so it (RunUpsertLockReadWrite) locks the session
// row FOR UPDATE, reads the run and the next run_index in one statement, then
// updates or inserts.
func (s *Store) UpsertRun(ctx context.Context, in *db.Run) (*db.Run, error) {
	if err := s.checkRunData(in); err != nil {
		return nil, err
	}
	out, scoped := runToWrite(ctx, in)
	if err := s.gate.enter(ctx); err != nil {
		return nil, err
	}
	defer s.gate.leave()
	ctx = s.gated(ctx)
	var err error
	switch s.d.RunUpsert {
	case RunUpsertLockReadWrite:
		err = s.inTx(ctx, func(c txConn) error { return s.upsertRunLocked(ctx, c, out, scoped) })
	case RunUpsertLockThenWrite:
		err = s.upsertRunLockThenWrite(ctx, out, scoped)
	default: // RunUpsertOneStatement (Dialect.Check allows no other)
		if s.hc == nil {
			err = s.upsertRunOnConflict(ctx, poolConn{s}, out, scoped)
			break
		}
		// The gate keeps the store's other writes out: a counter that rose
		// by one rose by this statement's commit (historyCache).
		before, ok := s.hc.count()
		err = s.upsertRunOnConflict(ctx, poolConn{s}, out, scoped)
		s.hc.committed(before, ok, &groupEffects{list: []runEffect{{run: out}}}, err)
	}
	if err != nil {
		return nil, s.runWriteErr(in, err)
	}
	return out, nil
}

// runToWrite copies a run for writing: as the scoped user, with its own
// run_index value, or the one ctx knows for it (db.WithRunIndex: no
// session lock to assign one). scoped reports whether the context carries
// a scope.
func runToWrite(ctx context.Context, in *db.Run) (out *db.Run, scoped bool) {
	cp := *in
	if u, ok := db.UserScope(ctx); ok {
		cp.UserID, scoped = u, true
	}
	if cp.RunIndex != nil {
		v := *cp.RunIndex
		cp.RunIndex = &v
	} else if v, ok := db.KnownRunIndex(ctx, cp.RunID); ok {
		cp.RunIndex = &v
	}
	return &cp, scoped
}

// checkRunData refuses a run_data longer than Config.MaxRunData.
func (s *Store) checkRunData(in *db.Run) error {
	if s.maxRunData > 0 && len(in.RunData) > s.maxRunData {
		return fmt.Errorf("%w: run %s: run_data of %d bytes is over the %d this %s database takes in one statement (raise max_allowed_packet)",
			db.ErrInvalidRecord, in.RunID, len(in.RunData), s.maxRunData, s.d.Name)
	}
	return nil
}

// runWriteErr maps a failed run write.
func (s *Store) runWriteErr(in *db.Run, err error) error {
	switch {
	case errors.Is(err, db.ErrNotFound):
		return err
	case isForeignKeyViolation(err):
		return fmt.Errorf("%w: run %s: session %s does not exist (store the session first)", db.ErrInvalidRecord, in.RunID, in.SessionID)
	}
	return s.fail("upsert run "+in.RunID, err)
}

// inTx runs fn in a transaction on the writer, with the dialect's
// TxOptions, and commits it. MySQL asks for READ COMMITTED, so a statement
// after a lock sees rows committed before the lock was granted; the others
// keep their default (SQLite's writer begins IMMEDIATE, Postgres is READ
// COMMITTED).
func (s *Store) inTx(ctx context.Context, fn func(c txConn) error) error {
	tx, err := s.w.BeginTx(ctx, s.d.TxOptions)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(txConn{s: s, tx: tx}); err != nil {
		return err
	}
	return tx.Commit()
}

// upsertRunSQL is the one-statement upsert, with the scope guard when scoped.
func (s *Store) upsertRunSQL(scoped bool) string {
	if scoped {
		return s.upsertRunQ[1]
	}
	return s.upsertRunQ[0]
}

// buildUpsertRunSQL builds the one-statement upsert; scoped adds the guard
// that keeps a scoped caller off another user's run (the conflict row is then
// left alone and nothing is returned).
func (s *Store) buildUpsertRunSQL(scoped bool) string {
	// A schema-qualified name cannot be used as a qualifier: the alias can.
	target, cur := s.runs+" AS r", "r"
	q := "INSERT INTO " + target + " (" + runCols + ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, " +
		"COALESCE(?, (SELECT COALESCE(MAX(run_index), -1) + 1 FROM " + s.runs + " WHERE session_id = ?)), ?, ?, ?)" +
		" ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, run_data = excluded.run_data," +
		" user_id = excluded.user_id, parent_run_id = excluded.parent_run_id, updated_at = excluded.updated_at"
	if scoped {
		q += " WHERE " + cur + ".user_id IS NULL OR " + cur + ".user_id = excluded.user_id"
	}
	if s.returnsKept() {
		return q + " RETURNING run_index, created_at, agent_id, team_id"
	}
	return q + " RETURNING run_index, created_at"
}

// returnsKept: the store's run upserts also return the agent and team ids
// an update keeps (SQLite, whose history cache applies the stored row; see
// historyCache). Elsewhere the two columns would cost two strings a write
// for nothing.
func (s *Store) returnsKept() bool { return s.d.Name == "sqlite" }

// refusedMarker is the text of the error buildUpsertRunAfterSessionSQL
// raises; runRefused recognises it.
const refusedMarker = "agentry: session or run refused"

// buildUpsertRunAfterSessionSQL is upsertRunSQL for a Batch that upserted
// the run's session in the statement before (Postgres). A Batch commits
// before its results are read, so a refusal must be a server error to roll
// the session's write back: the run is written only when the session row
// now belongs to the writer (the session upsert was not refused: it either
// set user_id to the record's or left the row alone), and when nothing was
// written (the session or, scoped, the run is another user's) the statement
// fails by casting refusedMarker to a number. The cast is inside a scalar
// subquery, so the planner cannot fold it into an error of every execution.
// Arguments: upsertRunArgs, then the session's id and user_id.
func (s *Store) buildUpsertRunAfterSessionSQL(scoped bool) string {
	q := "WITH w AS (INSERT INTO " + s.runs + " AS r (" + runCols + ") SELECT ?, ?, ?, ?, ?, ?, ?, ?, ?, " +
		"COALESCE(?, (SELECT COALESCE(MAX(run_index), -1) + 1 FROM " + s.runs + " WHERE session_id = ?)), ?, ?, ?" +
		" WHERE EXISTS (SELECT 1 FROM " + s.sessions + " WHERE session_id = ? AND user_id IS NOT DISTINCT FROM ?)" +
		" ON CONFLICT (run_id) DO UPDATE SET status = excluded.status, run_data = excluded.run_data," +
		" user_id = excluded.user_id, parent_run_id = excluded.parent_run_id, updated_at = excluded.updated_at"
	if scoped {
		q += " WHERE r.user_id IS NULL OR r.user_id = excluded.user_id"
	}
	return q + " RETURNING run_index, created_at)" +
		" SELECT run_index, created_at FROM w UNION ALL SELECT NULL, CAST((SELECT '" + refusedMarker +
		"' WHERE NOT EXISTS (SELECT 1 FROM w)) AS bigint) WHERE NOT EXISTS (SELECT 1 FROM w)"
}

// runRefused reports whether err is buildUpsertRunAfterSessionSQL's refusal.
func runRefused(err error) bool {
	return err != nil && strings.Contains(err.Error(), refusedMarker)
}

// upsertRunOnConflict runs upsertRunSQL on c (the SQLite writer, or a
// transaction holding the session lock) and fills out's run_index and
// created_at from the stored row.
func (s *Store) upsertRunOnConflict(ctx context.Context, c writeConn, out *db.Run, scoped bool) error {
	return scanUpsertedRun(returning(ctx, c, s.upsertRunSQL(scoped), s.upsertRunArgs(out)...), out, s.returnsKept())
}

// upsertRunArgs are the arguments of upsertRunSQL.
func (s *Store) upsertRunArgs(out *db.Run) []any {
	var idx any
	if out.RunIndex != nil {
		idx = *out.RunIndex
	}
	sid := any(out.SessionID) // bound twice, converted once (a string in an interface is an allocation)
	return []any{out.RunID, sid, string(out.RunType), nullStr(out.AgentID), nullStr(out.TeamID),
		nullStr(out.WorkflowID), nullStr(out.UserID), nullStr(out.ParentRunID), nullStr(string(out.Status)),
		idx, sid, s.jsonArg(out.RunData), out.CreatedAt, out.UpdatedAt}
}

// scanUpsertedRun reads upsertRunSQL's row into out's run_index and
// created_at, and with kept (Store.returnsKept) its agent_id and team_id;
// no row is another user's run (ErrNotFound).
func scanUpsertedRun(sc scanner, out *db.Run, kept bool) error {
	var stored looseNull
	var err error
	if kept {
		// Values: a pointer-shaped Scanner is boxed without allocating.
		err = sc.Scan(&stored, intCol{&out.CreatedAt}, storedString{s: &out.AgentID}, storedString{s: &out.TeamID})
	} else {
		err = sc.Scan(&stored, intCol{&out.CreatedAt})
	}
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: run %s", db.ErrNotFound, out.RunID) // another user's run
	}
	if err != nil {
		return err
	}
	out.RunIndex = nil
	if stored.Valid {
		out.RunIndex = &stored.Int64
	}
	return nil
}

// upsertRunLockThenWrite needs the session lock only to assign a run_index;
// a run that brings its own index is one autocommit statement.
func (s *Store) upsertRunLockThenWrite(ctx context.Context, out *db.Run, scoped bool) error {
	if out.RunIndex != nil {
		return s.upsertRunOnConflict(ctx, poolConn{s}, out, scoped)
	}
	if s.d.Batch != nil && s.pipelines() {
		// The lock and the upsert in one round trip: a refused run changes
		// nothing, so the Batch's commit needs no error to undo it.
		return s.batchRunWrite(ctx, out, scoped)
	}
	// READ COMMITTED: the insert sees runs committed before the lock was granted.
	return s.inTx(ctx, func(c txConn) error {
		if err := s.lockSession(ctx, c, out.SessionID); err != nil {
			return err
		}
		return s.upsertRunOnConflict(ctx, c, out, scoped)
	})
}

// batchRunWrite is upsertRunLockThenWrite's lock and upsert as one Batch.
func (s *Store) batchRunWrite(ctx context.Context, out *db.Run, scoped bool) error {
	var scanErr error
	err := s.d.Batch(ctx, s.w, []PipelineStmt{
		{Query: s.lockSessionQ, Args: []any{out.SessionID}},
		{Query: s.upsertRunSQL(scoped), Args: s.upsertRunArgs(out), Row: func(sc Scanner) error {
			scanErr = scanUpsertedRun(sc, out, s.returnsKept())
			return scanErr
		}},
	})
	if scanErr != nil {
		return scanErr
	}
	return err
}

// lockSession takes the session's lock inside c's transaction: Postgres's
// advisory transaction lock (RunUpsertLockThenWrite: executed, it returns
// nothing to read), or MySQL's FOR UPDATE on the session row (a query whose
// row is discarded).
func (s *Store) lockSession(ctx context.Context, c txConn, sessionID string) error {
	if s.d.RunUpsert == RunUpsertLockThenWrite {
		_, err := c.exec(ctx, s.lockSessionQ, sessionID)
		return err
	}
	rows, err := c.query(ctx, s.lockSessionQ, sessionID)
	if err != nil {
		return err
	}
	rows.Close()
	return nil
}

// upsertRunLocked serialises on the session row, then updates the run or
// inserts it with the next run_index: lock, read and write inside c's
// transaction, each statement prepared once.
func (s *Store) upsertRunLocked(ctx context.Context, c txConn, out *db.Run, scoped bool) error {
	if err := s.lockSession(ctx, c, out.SessionID); err != nil {
		return err
	}
	// One round trip reads the existing row (if any) and the next run_index.
	rows, err := c.query(ctx, "SELECT r.run_index, r.user_id, r.created_at, (SELECT COALESCE(MAX(run_index) + 1, 0) FROM "+s.runs+
		" WHERE session_id = ?) FROM (SELECT 1 AS one) AS one LEFT JOIN "+s.runs+" AS r ON r.run_id = ?", out.SessionID, out.RunID)
	if err != nil {
		return err
	}
	var (
		idx       looseNull
		owner     sql.NullString
		createdAt looseNull
		next      int64
	)
	if rows.Next() {
		err = rows.Scan(&idx, &owner, &createdAt, &next)
	}
	rows.Close()
	if err == nil {
		err = rows.Err()
	}
	if err != nil {
		return err
	}
	if createdAt.Valid { // the run exists
		if scoped && owner.Valid && owner.String != out.UserID {
			return fmt.Errorf("%w: run %s", db.ErrNotFound, out.RunID)
		}
		upd := "UPDATE " + s.runs + " SET status = ?, run_data = ?, user_id = ?, parent_run_id = ?, updated_at = ? WHERE run_id = ?"
		if _, err := c.exec(ctx, upd, nullStr(string(out.Status)), s.jsonArg(out.RunData), nullStr(out.UserID), nullStr(out.ParentRunID),
			out.UpdatedAt, out.RunID); err != nil {
			return err
		}
		out.RunIndex, out.CreatedAt = nil, createdAt.Int64
		if idx.Valid {
			out.RunIndex = &idx.Int64
		}
		return nil
	}
	if out.RunIndex == nil {
		out.RunIndex = &next
	}
	ins := "INSERT INTO " + s.runs + " (" + runCols + ") VALUES (" + placeholders(13) + ")"
	_, err = c.exec(ctx, ins, out.RunID, out.SessionID, string(out.RunType), nullStr(out.AgentID), nullStr(out.TeamID),
		nullStr(out.WorkflowID), nullStr(out.UserID), nullStr(out.ParentRunID), nullStr(string(out.Status)),
		*out.RunIndex, s.jsonArg(out.RunData), out.CreatedAt, out.UpdatedAt)
	return err
}

// storedString scans a nullable text column into *s (NULL is ""), without
// allocating when the value is already *s: an upsert returns the agent and
// team ids it was given, except when it updated a row that had others.
type storedString struct{ s *string }

func (d storedString) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*d.s = ""
	case string:
		*d.s = v
	case []byte:
		if string(v) != *d.s {
			*d.s = string(v)
		}
	default:
		return fmt.Errorf("cannot scan %T into a string", src)
	}
	return nil
}
