package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentryhq/agentry/db"
)

// Conditional session writes (db.Session.Expect): a compare-and-set of the
// session row against the one its writer read, so that writers in
// different processes (two servers on one database, Agno beside Agentry)
// cannot drop each other's session_state and session_metrics changes.
//
// The cheap compare is in the write's own statement, so an expectation
// that holds costs what an unconditional write costs: an UPDATE whose
// WHERE also compares session_data with the expected value (ExpectData) or
// an INSERT that does nothing on a conflict (ExpectNoRow). Postgres
// compares JSONB values (spacing and key order do not matter); SQLite and
// MySQL compare the column's bytes. When it writes nothing, the stored row
// tells why (casRefusal): another user's (db.ErrNotFound, checked first),
// missing or changed (db.ErrSessionChanged), or the expected value in
// another form than the compared one (a Python writer's spacing on SQLite,
// a string-wrapped or NaN-bearing document a read normalises: decodeJSON).
// That last one is written by the same compare-and-set with the stored
// form as the expected value: should the row change in between, that
// write is refused too. Zero Expect takes none of these statements.

// casStmts are the conditional session writes, built once at open.
type casStmts struct {
	// update is ExpectData's UPDATE (arguments: casUpdateArgs), returning
	// what the dialect's upsert returns (SQLite created_at alone,
	// Postgres the row, MySQL nothing: it reads the row after).
	update string
	// fast, on SQLite only, is update as buildUpdateSessionSQL's fast
	// path (arguments: updateSessionArgs, then the expected value): tried
	// first, update then writes the row the fast one missed by type or
	// owner only.
	fast string
	// insert is ExpectNoRow's insert-only write (arguments:
	// upsertSessionArgs), with update's RETURNING; MySQL's is an
	// INSERT IGNORE.
	insert string
	// pipedUpdate and pipedInsert (Postgres) are update and insert
	// raising casRefusedMarker instead of returning no row: a pipelined
	// transaction (a Batch commits before its results are read; a
	// shared group) must fail at the refused statement.
	pipedUpdate, pipedInsert string
	// lockingUpdate and lockingInsert are pipedUpdate and pipedInsert
	// taking the session's lock first, as lockingSessionQ does (their
	// session_id is Dialect.LockingSessionID's: the id twice).
	lockingUpdate, lockingInsert string
	// read is the stored row a refusal is judged by: user_id and
	// session_data, locked where the dialect locks rows.
	read string
}

// casRefusedMarker is the text the piped conditional writes raise;
// casRefusedErr recognises it.
const casRefusedMarker = "agentry: conditional session write refused"

// casTries bounds the writes of one conditional write: the cheap compare,
// then the stored form (when the row matched by value) again should the
// row change form in between.
const casTries = 3

// buildCasStmts builds Store.cas from the dialect.
func (s *Store) buildCasStmts() casStmts {
	var c casStmts
	var cmp, owner string
	switch {
	case s.d.Name == "postgres":
		cmp = "s.session_data IS NOT DISTINCT FROM CAST(? AS jsonb)"
	case s.d.Upsert == OnDuplicateKey:
		// MySQL's JSON reads back normalised (the expected value is
		// what a read returned), MariaDB's is text kept as written.
		cmp = s.d.ByteKey("session_data") + " <=> CAST(? AS BINARY)"
	default:
		// SQLite: TEXT or BLOB, compared as bytes either way.
		cmp = "CAST(s.session_data AS BLOB) IS CAST(? AS BLOB)"
	}
	set := `session_type = ?, agent_id = ?, team_id = ?, workflow_id = ?, user_id = ?,
		session_data = ?, agent_data = ?, team_data = ?, workflow_data = ?, metadata = ?, summary = ?, updated_at = ?`
	if s.d.Upsert == OnDuplicateKey {
		owner = "(user_id IS NULL OR " + s.d.EqExact("user_id") + ")"
		c.update = "UPDATE " + s.sessions + " SET " + set + " WHERE session_id = ? AND " + owner + " AND " + cmp
		c.insert = s.d.InsertIgnore(s.sessions, splitCols(sessionCols), "session_id")
		c.read = "SELECT user_id, session_data FROM " + s.sessions + " WHERE session_id = ? FOR UPDATE"
		return c
	}
	ret := " RETURNING " + sessionCols
	if s.upsertSessionCreatedQ != "" {
		ret = " RETURNING created_at"
	}
	owner = "(s.user_id IS NULL OR s.user_id = ?)"
	update := func(id string) string {
		return "UPDATE " + s.sessions + " AS s SET " + set + " WHERE s.session_id = " + id + " AND " + owner + " AND " + cmp + ret
	}
	insert := func(id string) string {
		return "INSERT INTO " + s.sessions + " (" + sessionCols + ") VALUES (" + id + ", " + placeholders(13) + ") ON CONFLICT (session_id) DO NOTHING" + ret
	}
	c.update, c.insert = update("?"), insert("?")
	if s.lockingSessionQ != "" {
		// As lockingSessionQ: the session's lock taken by the write.
		id := s.d.LockingSessionID
		c.lockingUpdate, c.lockingInsert = raisingWhenEmpty(update(id)), raisingWhenEmpty(insert(id))
	}
	c.read = "SELECT user_id, session_data FROM " + s.sessions + " WHERE session_id = ?"
	if s.updateSessionQ != "" {
		c.fast = strings.TrimSuffix(s.updateSessionQ, "RETURNING created_at") + "AND " + strings.Replace(cmp, "s.session_data", "session_data", 1) + ret
	}
	if s.d.Name == "postgres" {
		c.read += " FOR UPDATE"
		c.pipedUpdate, c.pipedInsert = raisingWhenEmpty(c.update), raisingWhenEmpty(c.insert)
	}
	return c
}

// raisingWhenEmpty wraps a write RETURNING sessionCols so that, when it
// returns no row, the statement fails with casRefusedMarker (cast to a
// number inside a scalar subquery that reads the write's result, so that
// the planner cannot fold it into an error of every execution).
func raisingWhenEmpty(q string) string {
	cols := "w." + strings.ReplaceAll(sessionCols, ", ", ", w.")
	return "WITH w AS (" + q + ") SELECT " + cols + " FROM (SELECT 1) AS one LEFT JOIN w ON true" +
		" WHERE CAST((SELECT '" + casRefusedMarker + "' WHERE NOT EXISTS (SELECT 1 FROM w)) AS bigint) IS NULL"
}

// errCasRefused is a piped conditional write's refusal, before casRefusal
// said why.
var errCasRefused = errors.New("conditional session write refused")

// scanPipedSession reads the row of pipedSessionPart's session write:
// scanUpsertedSession's, or for a conditional write errCasRefused when it
// was refused.
func (s *Store) scanPipedSession(sc scanner, w *db.Session) (*db.Session, error) {
	if !conditional(w) {
		return s.scanUpsertedSession(sc, w.SessionID)
	}
	out, err := scanSession(sc)
	switch {
	case errors.Is(err, sql.ErrNoRows), casRefusedErr(err):
		return nil, errCasRefused
	case err != nil:
		return nil, s.fail("upsert session "+w.SessionID, err)
	}
	return out, nil
}

// conditional reports whether s is written only if its expectation holds
// (an unknown ExpectedRow is unconditional, as db.SessionExpect.Matches
// reads it).
func conditional(s *db.Session) bool {
	return s.Expect.Row == db.ExpectNoRow || s.Expect.Row == db.ExpectData
}

// casRefusedErr reports a piped conditional write's refusal.
func casRefusedErr(err error) bool {
	return err != nil && strings.Contains(err.Error(), casRefusedMarker)
}

// casUpdateArgs are casStmts.update's arguments: the columns (data, from
// sessionWrite), updated_at, the id, the owner and the expected value.
func casUpdateArgs(in *db.Session, data []any, expected any) []any {
	args := make([]any, 0, len(data)+4)
	return append(append(args, data...), in.UpdatedAt, in.SessionID, nullStr(in.UserID), expected)
}

// casExpected is the expected session_data as the cheap compare binds it;
// ok is false when nothing stored can equal it there (it is not JSON: a
// Postgres cast would fail), and the stored row decides (casRefusal).
func (s *Store) casExpected(e db.SessionExpect) (v any, ok bool) {
	if len(e.Data) == 0 {
		return nil, true
	}
	if s.d.Name == "postgres" && !json.Valid(e.Data) {
		return nil, false
	}
	return s.jsonText(e.Data), true
}

// casForm picks a conditional write's statement among casStmts'.
type casForm uint8

const (
	casPlain        casForm = iota // update, insert
	casFast                        // fast (SQLite; update elsewhere), insert
	casPiped                       // pipedUpdate, pipedInsert
	casPipedLocking                // lockingUpdate, lockingInsert
)

// casStmt is the conditional write of w (ExpectNoRow or ExpectData) in
// form f and its arguments, with expected as the compared value.
func (s *Store) casStmt(w *db.Session, data []any, expected any, f casForm) (string, []any) {
	if w.Expect.Row == db.ExpectNoRow {
		switch f {
		case casPiped:
			return s.cas.pipedInsert, upsertSessionArgs(w, data)
		case casPipedLocking:
			return s.cas.lockingInsert, append([]any{w.SessionID}, upsertSessionArgs(w, data)...)
		}
		return s.cas.insert, upsertSessionArgs(w, data)
	}
	switch {
	case f == casPiped:
		return s.cas.pipedUpdate, casUpdateArgs(w, data, expected)
	case f == casPipedLocking:
		args := make([]any, 0, len(data)+5)
		args = append(append(args, data...), w.UpdatedAt, w.SessionID, w.SessionID, nullStr(w.UserID), expected)
		return s.cas.lockingUpdate, args
	case f == casFast && s.cas.fast != "":
		return s.cas.fast, append(updateSessionArgs(w, data), expected)
	}
	return s.cas.update, casUpdateArgs(w, data, expected)
}

// casRefusal says why the conditional write of w wrote nothing, from the
// row as c reads it now: another user's (db.ErrNotFound), missing or
// changed (db.ErrSessionChanged), or the read's own error; or, nil error,
// the row holds the expected value in another form, stored, which a write
// expecting stored exactly then writes over.
func (s *Store) casRefusal(ctx context.Context, c writeConn, w *db.Session) (stored any, err error) {
	var user sql.NullString
	var raw []byte
	err = c.queryRow(ctx, s.cas.read, w.SessionID).Scan(&user, &raw)
	exists := err == nil
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, s.fail("read session "+w.SessionID, err)
	case user.Valid && user.String != w.UserID:
		return nil, fmt.Errorf("%w: session %s belongs to another user", db.ErrNotFound, w.SessionID)
	}
	data, derr := decodeJSON(raw)
	if w.Expect.Row == db.ExpectNoRow || !exists || derr != nil || !w.Expect.Matches(true, data) {
		return nil, fmt.Errorf("%w: session %s", db.ErrSessionChanged, w.SessionID)
	}
	if raw == nil {
		return nil, nil
	}
	return string(raw), nil
}

// conditionalSession is upsertSession of a write with an expectation (in
// as sessionWrite made it, data its values) on c.
func (s *Store) conditionalSession(ctx context.Context, c writeConn, in *db.Session, data []any) (*db.Session, error) {
	var out *db.Session
	err := s.casRetry(ctx, c, in, func(expected any, first bool) error {
		f := casPlain
		if first {
			f = casFast
		}
		o, err := s.casWriteOnce(ctx, c, in, data, expected, f)
		if err == nil && o == nil {
			return errCasRefused
		}
		out = o
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// casRetry runs write, a conditional write of w comparing expected (first:
// its first try), until it is not refused (errCasRefused). After a refusal
// the stored row, as c reads it, says why (casRefusal) or gives the form to
// expect; at most casTries times. A w.Expect whose value the compare cannot
// bind (casExpected) goes to the row first.
func (s *Store) casRetry(ctx context.Context, c writeConn, w *db.Session, write func(expected any, first bool) error) error {
	expected, ok := s.casExpected(w.Expect)
	for try := 1; ; try++ {
		if ok {
			if err := write(expected, try == 1); !errors.Is(err, errCasRefused) {
				return err
			}
		}
		ok = true
		var err error
		if expected, err = s.casRefusal(ctx, c, w); err != nil {
			return err
		}
		if try == casTries {
			return fmt.Errorf("%w: session %s", db.ErrSessionChanged, w.SessionID)
		}
	}
}

// casWriteOnce sends the conditional write once: the stored row, or nil
// (and no error) when the write was refused.
func (s *Store) casWriteOnce(ctx context.Context, c writeConn, in *db.Session, data []any, expected any, f casForm) (*db.Session, error) {
	q, args := s.casStmt(in, data, expected, f)
	var out *db.Session
	var err error
	switch {
	case s.d.Upsert == OnDuplicateKey:
		// No RETURNING: whether it wrote, then the row (as upsertSession).
		wrote := false
		if in.Expect.Row == db.ExpectNoRow {
			wrote, err = s.d.Inserted(c.exec(ctx, q, args...))
		} else {
			var res sql.Result
			if res, err = c.exec(ctx, q, args...); err == nil {
				var n int64
				n, err = res.RowsAffected() // rows matched: ClientFoundRows
				wrote = n > 0
			}
		}
		if err == nil && !wrote {
			return nil, nil
		}
		if err == nil {
			out, err = scanSession(c.queryRow(ctx, "SELECT "+sessionCols+" FROM "+s.sessions+" WHERE session_id = ?", in.SessionID))
		}
	case s.upsertSessionCreatedQ != "":
		var created int64
		if err = returning(ctx, c, q, args...).Scan(intCol{&created}); err == nil {
			out, err = writtenSession(in, created)
		}
	default:
		out, err = scanSession(returning(ctx, c, q, args...))
	}
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, s.fail("upsert session "+in.SessionID, err)
	}
	out.Expect = db.SessionExpect{}
	return out, nil
}
