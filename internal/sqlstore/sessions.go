package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

const sessionCols = "session_id, session_type, agent_id, team_id, workflow_id, user_id, session_data, agent_data, team_data, workflow_data, metadata, summary, created_at, updated_at"

// UpsertSession inserts a session, or updates it where the stored user_id is
// NULL or equals the record's (scoped callers always write as themselves);
// otherwise ErrNotFound. It never writes runs.
func (s *Store) UpsertSession(ctx context.Context, in *db.Session) (*db.Session, error) {
	if err := s.gate.enter(ctx); err != nil {
		return nil, err
	}
	defer s.gate.leave()
	return s.upsertSession(s.gated(ctx), poolConn{s}, in)
}

// upsertSession is UpsertSession on c: autocommit statements on the writer
// or a transaction (SaveRun).
// sessionWrite is the session as written (as the scoped user) and the
// values of its columns after session_id.
func (s *Store) sessionWrite(ctx context.Context, in *db.Session) (*db.Session, []any) {
	if u, ok := db.UserScope(ctx); ok {
		cp := *in
		cp.UserID = u
		in = &cp
	}
	return in, []any{string(in.SessionType), nullStr(in.AgentID), nullStr(in.TeamID), nullStr(in.WorkflowID), nullStr(in.UserID),
		s.jsonArg(in.SessionData), s.jsonArg(in.AgentData), s.jsonArg(in.TeamData), s.jsonArg(in.WorkflowData),
		s.jsonArg(in.Metadata), s.jsonArg(in.Summary)}
}

// upsertSessionArgs are the arguments of upsertSessionSQL.
func upsertSessionArgs(in *db.Session, data []any) []any {
	return append(append([]any{in.SessionID}, data...), in.CreatedAt, in.UpdatedAt)
}

// pipedSessionPart is the start of a piped save of run out with session
// sess (nil: none): the session as written (w, nil without), whether the
// save needs the session's lock as a statement of its own (lock), and the
// session's upsert (q "" without). A save that assigns a run_index takes
// the lock first; when the dialect can (Dialect.LockingSessionID) and the
// session is the run's, its upsert takes it, one statement fewer. A
// conditional write (sess.Expect) is the raising compare-and-set
// (casStmts.pipedUpdate, pipedInsert; lockingUpdate, lockingInsert where
// the upsert would take the lock) with expected as the compared value.
func (s *Store) pipedSessionPart(ctx context.Context, sess *db.Session, out *db.Run, expected any) (w *db.Session, lock bool, q string, args []any) {
	lock = out.RunIndex == nil
	if sess == nil {
		return nil, lock, "", nil
	}
	w, data := s.sessionWrite(ctx, sess)
	if conditional(w) {
		if lock && s.cas.lockingUpdate != "" && w.SessionID == out.SessionID {
			q, args = s.casStmt(w, data, expected, casPipedLocking)
			return w, false, q, args
		}
		q, args = s.casStmt(w, data, expected, casPiped)
		return w, lock, q, args
	}
	if lock && s.lockingSessionQ != "" && w.SessionID == out.SessionID {
		return w, false, s.lockingSessionQ, append([]any{w.SessionID}, upsertSessionArgs(w, data)...)
	}
	return w, lock, s.upsertSessionSQL(), upsertSessionArgs(w, data)
}

// scanUpsertedSession reads upsertSessionSQL's row.
func (s *Store) scanUpsertedSession(sc scanner, sessionID string) (*db.Session, error) {
	out, err := scanSession(sc)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: session %s belongs to another user", db.ErrNotFound, sessionID)
	}
	if err != nil {
		return nil, s.fail("upsert session "+sessionID, err)
	}
	return out, nil
}

func (s *Store) upsertSession(ctx context.Context, c writeConn, in *db.Session) (*db.Session, error) {
	in, data := s.sessionWrite(ctx, in)
	if conditional(in) {
		return s.conditionalSession(ctx, c, in, data)
	}
	args := upsertSessionArgs(in, data)
	if s.d.Upsert == OnConflict {
		if s.updateSessionQ != "" && (in.CreatedAt != in.UpdatedAt || s.hc.knows(in.SessionID)) {
			// The usual write of a turn: the row exists with this type and
			// owner. Updated without naming session_type and user_id, it
			// rewrites only the table's page: SQLite rewrites the entries of
			// every index on a column an UPDATE sets, changed or not (the
			// upsert below dirties three pages). A session created in this
			// second (a new one: created_at defaults to now) goes straight
			// to the upsert, which inserts it in one statement, unless its
			// history was read (the history cache holds it): a conversation's
			// later turns within its first second.
			// Only created_at is read back: the rest is what was written,
			// as SQLite stores it (its TEXT columns hold the bytes given),
			// decoded as scanSession decodes a row (writtenSession).
			// Reading back the whole row (its agent_data is a few KB,
			// copied out of SQLite) was a fifth of a session write's
			// allocations.
			var created int64
			err := returning(ctx, c, s.updateSessionQ, updateSessionArgs(in, data)...).Scan(intCol{&created})
			if !errors.Is(err, sql.ErrNoRows) {
				if err != nil {
					return nil, s.fail("upsert session "+in.SessionID, err)
				}
				return writtenSession(in, created)
			}
		}
		if s.upsertSessionCreatedQ != "" {
			// SQLite: as the update above, only created_at is read back.
			var created int64
			err := returning(ctx, c, s.upsertSessionCreatedQ, args...).Scan(intCol{&created})
			switch {
			case errors.Is(err, sql.ErrNoRows):
				return nil, fmt.Errorf("%w: session %s belongs to another user", db.ErrNotFound, in.SessionID)
			case err != nil:
				return nil, s.fail("upsert session "+in.SessionID, err)
			}
			return writtenSession(in, created)
		}
		// One statement: insert, or update where the owner matches, and read
		// the stored row back.
		return s.scanUpsertedSession(returning(ctx, c, s.upsertSessionSQL(), args...), in.SessionID)
	}
	inserted, err := s.d.Inserted(c.exec(ctx, s.d.InsertIgnore(s.sessions, splitCols(sessionCols), "session_id"), args...))
	if err != nil {
		return nil, s.fail("upsert session "+in.SessionID, err)
	}
	if !inserted {
		upd := "UPDATE " + s.sessions + ` SET session_type = ?, agent_id = ?, team_id = ?, workflow_id = ?, user_id = ?,
			session_data = ?, agent_data = ?, team_data = ?, workflow_data = ?, metadata = ?, summary = ?, updated_at = ?
			WHERE session_id = ? AND (user_id IS NULL OR ` + s.d.EqExact("user_id") + ")"
		args := append(append(data, in.UpdatedAt, in.SessionID), nullStr(in.UserID))
		res, err := c.exec(ctx, upd, args...)
		if err != nil {
			return nil, s.fail("upsert session "+in.SessionID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil, fmt.Errorf("%w: session %s belongs to another user", db.ErrNotFound, in.SessionID)
		}
	}
	out, err := scanSession(c.queryRow(ctx, "SELECT "+sessionCols+" FROM "+s.sessions+" WHERE session_id = ?", in.SessionID))
	if err != nil {
		return nil, s.fail("upsert session "+in.SessionID, err)
	}
	return out, nil
}

// buildUpdateSessionSQL updates an existing session whose type and owner
// are the record's (user_id IS: NULL-safe), setting every column but those
// two and created_at, as the upsert's update does; no row when there is no
// such session.
func (s *Store) buildUpdateSessionSQL() string {
	return "UPDATE " + s.sessions + ` SET agent_id = ?, team_id = ?, workflow_id = ?, session_data = ?, agent_data = ?,
		team_data = ?, workflow_data = ?, metadata = ?, summary = ?, updated_at = ?
		WHERE session_id = ? AND session_type = ? AND user_id IS ? RETURNING created_at`
}

// writtenSession is the session row an update of in stored, as scanSession
// reads it, with the stored created_at: JSON columns as decodeJSON gives
// them (null is empty, a string-encoded document unwrapped), copied.
func writtenSession(in *db.Session, created int64) (*db.Session, error) {
	out := *in
	out.CreatedAt = created
	out.Expect = db.SessionExpect{} // a condition of the write, not of the row
	if err := decodeSessionJSON(&out, in.SessionData, in.AgentData, in.TeamData, in.WorkflowData, in.Metadata, in.Summary); err != nil {
		return nil, err
	}
	return &out, nil
}

// updateSessionArgs are buildUpdateSessionSQL's arguments; data is
// sessionWrite's.
func updateSessionArgs(in *db.Session, data []any) []any {
	return append(append(append(make([]any, 0, 13), data[1:4]...), data[5:]...), in.UpdatedAt, in.SessionID, data[0], data[4])
}

// upsertSessionSQL is UpsertSession as one INSERT … ON CONFLICT … RETURNING
// (SQLite ≥ 3.35 and Postgres), built once by buildUpsertSessionSQL.
func (s *Store) upsertSessionSQL() string { return s.upsertSessionQ }

// buildUpsertSessionSQL builds upsertSessionSQL, whose session_id value is
// id ("?", or Dialect.LockingSessionID's expression). The conflict update
// applies only where the stored user_id is NULL or equals the record's;
// otherwise nothing returns.
func (s *Store) buildUpsertSessionSQL(id string) string {
	target, cur := s.sessions+" AS s", "s" // a schema-qualified name cannot qualify a column

	return "INSERT INTO " + target + " (" + sessionCols + ") VALUES (" + id + ", " + placeholders(13) + `)
		ON CONFLICT (session_id) DO UPDATE SET session_type = excluded.session_type, agent_id = excluded.agent_id,
		team_id = excluded.team_id, workflow_id = excluded.workflow_id, user_id = excluded.user_id,
		session_data = excluded.session_data, agent_data = excluded.agent_data, team_data = excluded.team_data,
		workflow_data = excluded.workflow_data, metadata = excluded.metadata, summary = excluded.summary,
		updated_at = excluded.updated_at
		WHERE ` + cur + ".user_id IS NULL OR " + cur + ".user_id = excluded.user_id RETURNING " + sessionCols
}

// GetSession returns a session in scope or ErrNotFound.
func (s *Store) GetSession(ctx context.Context, sessionID string) (*db.Session, error) {
	u, _ := db.UserScope(ctx)
	return s.getSession(ctx, s.r, sessionID, u)
}

func (s *Store) getSession(ctx context.Context, q *sql.DB, sessionID, user string) (*db.Session, error) {
	w := &where{}
	w.add("session_id = ?", sessionID)
	s.userEq(w, "user_id", user)
	out, err := s.readSession(ctx, q, s.d.Bind("SELECT "+sessionCols+" FROM "+s.sessions+w.String()), w.args)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: session %s", db.ErrNotFound, sessionID)
	}
	if err != nil {
		return nil, s.fail("get session "+sessionID, err)
	}
	return out, nil
}

// readSession reads the one session row of q (bound) through readRows
// (Postgres: pgx's own rows, without database/sql's per-query goroutine
// and value conversions); sql.ErrNoRows when there is none.
func (s *Store) readSession(ctx context.Context, pool *sql.DB, q string, args []any) (out *db.Session, err error) {
	qerr := s.readRows(ctx, pool, q, args, func(rows Rows) (rerr error) {
		defer func() {
			if cerr := rows.Close(); rerr == nil {
				rerr = cerr
			}
		}()
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return err
			}
			return sql.ErrNoRows
		}
		out, err = scanSession(rows)
		return nil
	})
	if qerr != nil {
		return nil, qerr
	}
	return out, err
}

// ListSessions returns one page and the total count. Rows that cannot be
// decoded (written by another process: text that is not JSON, a timestamp
// that is not an integer) are left out of the page and reported as
// *db.CorruptRowError (joined) next to the rows that did decode.
func (s *Store) ListSessions(ctx context.Context, f db.SessionFilter) ([]db.Session, int, error) {
	w := &where{}
	w.eq("session_type", string(f.SessionType))
	if f.ComponentID != "" {
		switch f.SessionType {
		case run.TypeAgent:
			w.add("agent_id = ?", f.ComponentID)
		case run.TypeTeam:
			w.add("team_id = ?", f.ComponentID)
		case run.TypeWorkflow:
			w.add("workflow_id = ?", f.ComponentID)
		default:
			w.add("(agent_id = ? OR team_id = ? OR workflow_id = ?)", f.ComponentID, f.ComponentID, f.ComponentID)
		}
	}
	s.userEq(w, "user_id", f.UserID)
	s.scope(ctx, w)
	if f.SessionName != "" {
		w.add(s.d.LikeContains(s.d.JSONField("session_data", "session_name")), ContainsPattern(f.SessionName))
	}
	var total int
	if err := s.r.QueryRowContext(ctx, s.d.Bind("SELECT COUNT(*) FROM "+s.sessions+w.String()), w.args...).Scan(&total); err != nil {
		return nil, 0, s.fail("count sessions", err)
	}
	order := sortCol(f.SortBy, "created_at", "created_at", "updated_at") + " " + dir(f.SortOrder)
	q := fmt.Sprintf("SELECT %s FROM %s%s ORDER BY %s, session_id %s LIMIT %d OFFSET %d",
		sessionCols, s.sessions, w.String(), order, dir(f.SortOrder), f.Limit, offset(f.Limit, f.Page))
	rows, err := s.r.QueryContext(ctx, s.d.Bind(q), w.args...)
	if err != nil {
		return nil, 0, s.fail("list sessions", err)
	}
	defer rows.Close()
	out := []db.Session{}
	var corrupt []error
	for rows.Next() {
		ss, err := scanSession(rows)
		var ce *db.CorruptRowError
		switch {
		case errors.As(err, &ce):
			corrupt = append(corrupt, err)
		case err != nil:
			return nil, 0, s.fail("list sessions", err)
		default:
			out = append(out, *ss)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, s.fail("list sessions", err)
	}
	return out, total, errors.Join(corrupt...)
}

// DeleteSessions deletes sessions in scope and, in the same transaction,
// what they own: their runs (by cascade), their runs' step journals,
// approvals, durable-queue jobs, idempotency keys and event logs, their
// traces, their offloaded tool results (the agno_tool_results rows naming
// them and the agno_fs files those rows point at), and the references and
// copied content of their schedule runs (see deleteSessionsTx). Rows of ids
// that are missing or another user's are left alone. A deadlock the backend
// broke (a team member's write taking its journal fence before the team's
// job row, the reverse of this order; docs/adr/queue-claim-lock-order.md)
// is retried.
func (s *Store) DeleteSessions(ctx context.Context, sessionIDs ...string) error {
	if err := s.gate.enter(ctx); err != nil {
		return err
	}
	defer s.gate.leave()
	now := time.Now().Unix()
	for try := 1; ; try++ {
		err := s.inTx(ctx, func(c txConn) error {
			ext, err := s.sessionTablesOf(ctx, c.tx)
			if err != nil {
				return err
			}
			for chunk := range chunks(sessionIDs, 500) {
				if err := s.deleteSessionsTx(ctx, c.tx, ext, chunk, now); err != nil {
					return err
				}
			}
			return nil
		})
		if err == nil || try == 4 || !s.deadlocked(err) {
			return s.fail("delete sessions", err)
		}
	}
}

// deadlocked reports a transaction the backend rolled back to break a
// deadlock: the dialect's RetryTx (MySQL), or Postgres's SQLSTATE 40P01
// (its drivers' errors tell their SQLSTATE).
func (s *Store) deadlocked(err error) bool {
	if s.d.RetryTx != nil && s.d.RetryTx(err) {
		return true
	}
	var st interface{ SQLState() string }
	return errors.As(err, &st) && st.SQLState() == "40P01"
}

// Tables of other packages in the store's database that hold a session's
// content, deleted with it when they exist (they are created on first use):
// the durable queue's jobs (package queue: the payload holds the run's
// input) and its idempotency keys (a key naming a deleted run), and the
// background runs' event log (package runlog: the streamed events). The
// packages name their tables with these constants.
const (
	JobsTable      = "agno_jobs"
	JobKeysTable   = "agno_job_keys"
	RunEventsTable = "agentry_run_events"
)

// sessionTables says which of JobsTable, JobKeysTable and RunEventsTable
// exist.
type sessionTables struct{ jobs, keys, events bool }

func (s *Store) sessionTablesOf(ctx context.Context, tx *sql.Tx) (sessionTables, error) {
	if s.seenTables.Load() {
		return sessionTables{jobs: true, keys: true, events: true}, nil
	}
	exists := func(name string) (bool, error) {
		q, args := s.d.Catalog.Tables(name)
		var n int
		err := tx.QueryRowContext(ctx, q, args...).Scan(&n)
		return n > 0, err
	}
	var t sessionTables
	var err error
	if t.jobs, err = exists(JobsTable); err != nil {
		return t, err
	}
	if t.keys, err = exists(JobKeysTable); err != nil {
		return t, err
	}
	if t.events, err = exists(RunEventsTable); err == nil && t.jobs && t.keys && t.events {
		s.seenTables.Store(true)
	}
	return t, err
}

// deleteSessionsTx deletes one chunk of sessions with what they own; now
// is the completion time of the schedule runs it ends.
//
// Job rows go first: on Postgres they are locked in id order, as the
// durable queue's lease renewal locks them, and before the run rows, as a
// run's fenced write locks its job row first. A running job whose row is
// gone is fenced: its attempt can write nothing more (no run row, no event,
// no session), its heartbeat stops it, and a queued one is never claimed.
//
// The runs' step journals (fence rows included) go after the job rows, in
// the order of a run's final save, which records its job's outcome and
// then clears its journal, and of a claim, which locks the job row before
// it raises the journal's fence (docs/adr/queue-claim-lock-order.md). A
// team member's write takes its journal fence before the team's job row
// (the reverse): should one meet this delete, the backend breaks the
// deadlock and the delete is retried (DeleteSessions).
// A paused, failed, interrupted or fenced run keeps its journal until then:
// the model requests and results and tool results of the run.
//
// Their idempotency keys go too: a key names its first run for good, and
// answering a repeated request with a deleted run would be answering with
// nothing; the repeated request runs anew (docs/adr/session-delete-media.md).
//
// Schedule runs are Agno's schedule history and stay, without what they
// hold of the session: their run and session ids, the run's input, output
// and requirements become NULL; one still running or paused is failed, as
// the scheduler fails a running one whose run is missing, and not retried
// (its run is gone: nothing would end it, and the scheduler would take a
// running row without a run for a retry waiting to fire).
func (s *Store) deleteSessionsTx(ctx context.Context, tx *sql.Tx, ext sessionTables, ids []string, now int64) error {
	w := &where{}
	w.add("session_id IN ("+placeholders(len(ids))+")", anys(ids)...)
	s.scope(ctx, w)
	owned, err := QueryStrings(ctx, tx, s.d.Bind("SELECT session_id FROM "+s.sessions+w.String()), w.args...)
	if err != nil || len(owned) == 0 {
		return err
	}
	in := "session_id IN (" + placeholders(len(owned)) + ")"
	runsIn := "run_id IN (SELECT run_id FROM " + s.runs + " WHERE " + in + ")"
	exec := func(q string, args ...any) error {
		if len(args) == 0 {
			args = anys(owned)
		}
		_, err := tx.ExecContext(ctx, s.d.Bind(q), args...)
		return err
	}
	if ext.jobs {
		jobs := s.d.Table(JobsTable)
		if s.d.Name == "postgres" {
			if _, err := QueryStrings(ctx, tx, s.d.Bind("SELECT id FROM "+jobs+" WHERE "+in+" ORDER BY id FOR UPDATE"), anys(owned)...); err != nil {
				return err
			}
		}
		if err := exec("DELETE FROM " + jobs + " WHERE " + in); err != nil {
			return err
		}
	}
	if ext.keys {
		if err := exec("DELETE FROM " + s.d.Table(JobKeysTable) + " WHERE " + runsIn); err != nil {
			return err
		}
	}
	if err := exec("DELETE FROM " + s.steps + " WHERE " + runsIn); err != nil {
		return err
	}
	if ext.events {
		if err := exec("DELETE FROM " + s.d.Table(RunEventsTable) + " WHERE " + runsIn); err != nil {
			return err
		}
	}
	twice := append(anys(owned), anys(owned)...)
	if err := exec("DELETE FROM "+s.approvs+" WHERE "+in+" OR "+runsIn, twice...); err != nil {
		return err
	}
	// status is assigned last: MySQL evaluates the assignments in order,
	// and the others read the status the row had.
	live := "status IN (?, ?)"
	q := "UPDATE " + s.scheduleRuns() + " SET completed_at = CASE WHEN " + live + " THEN COALESCE(completed_at, ?) ELSE completed_at END, " +
		"error = CASE WHEN " + live + " THEN ? ELSE error END, " +
		"run_id = NULL, session_id = NULL, input = NULL, output = NULL, requirements = NULL, " +
		"status = CASE WHEN " + live + " THEN ? ELSE status END WHERE " + in + " OR " + runsIn
	args := []any{db.ScheduleRunRunning, db.ScheduleRunPaused, now,
		db.ScheduleRunRunning, db.ScheduleRunPaused, db.ScheduleRunSessionDeleted,
		db.ScheduleRunRunning, db.ScheduleRunPaused, db.ScheduleRunFailed}
	if err := exec(q, append(args, twice...)...); err != nil {
		return err
	}
	if err := exec("DELETE FROM " + s.spans() + " WHERE trace_id IN (SELECT trace_id FROM " + s.traces() + " WHERE " + in + ")"); err != nil {
		return err
	}
	if err := exec("DELETE FROM " + s.traces() + " WHERE " + in); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, s.d.Bind("SELECT namespace, path FROM "+s.results+" WHERE "+in), anys(owned)...)
	if err != nil {
		return err
	}
	var files []any
	for rows.Next() {
		var ns, p string
		if err := rows.Scan(&ns, &p); err != nil {
			rows.Close()
			return err
		}
		files = append(files, ns, p)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for chunk := range chunks(files, 2*250) {
		q := "DELETE FROM " + s.fs + " WHERE " + strings.TrimSuffix(strings.Repeat("(namespace = ? AND path = ?) OR ", len(chunk)/2), " OR ")
		if _, err := tx.ExecContext(ctx, s.d.Bind(q), chunk...); err != nil {
			return err
		}
	}
	if err := exec("DELETE FROM " + s.results + " WHERE " + in); err != nil {
		return err
	}
	return exec("DELETE FROM " + s.sessions + " WHERE " + in)
}

// QueryStrings returns the first column of a query's rows as strings.
func QueryStrings(ctx context.Context, q Querier, query string, args ...any) ([]string, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

type scanner interface{ Scan(dest ...any) error }

// sessionScan is scanSession's destinations in one value: passed to Scan
// through an interface, each local would be a heap allocation of its own
// (13 a session read, one read a turn).
type sessionScan struct {
	typ                           string
	agent, team, wf, user         sql.NullString
	sd, ad, td, wd, meta, summary []byte
	updated                       looseNull
}

func scanSession(sc scanner) (*db.Session, error) {
	out := &db.Session{}
	t := &sessionScan{}
	if err := sc.Scan(&out.SessionID, &t.typ, &t.agent, &t.team, &t.wf, &t.user, &t.sd, &t.ad, &t.td, &t.wd, &t.meta, &t.summary, intCol{&out.CreatedAt}, &t.updated); err != nil {
		return nil, undecodable("sessions", out.SessionID, err)
	}
	out.SessionType = run.Type(t.typ)
	out.AgentID, out.TeamID, out.WorkflowID, out.UserID = t.agent.String, t.team.String, t.wf.String, t.user.String
	out.UpdatedAt = t.updated.Int64
	return out, decodeSessionJSON(out, t.sd, t.ad, t.td, t.wd, t.meta, t.summary)
}

// decodeSessionJSON sets out's JSON columns from their stored texts as
// decodeJSON reads them; a column that does not decode is left empty and
// makes the error (a *db.CorruptRowError).
func decodeSessionJSON(out *db.Session, sd, ad, td, wd, meta, summary []byte) error {
	var err error
	for _, c := range []struct {
		dst *json.RawMessage
		src []byte
	}{{&out.SessionData, sd}, {&out.AgentData, ad}, {&out.TeamData, td},
		{&out.WorkflowData, wd}, {&out.Metadata, meta}, {&out.Summary, summary}} {
		v, e := decodeJSON(c.src)
		if e != nil {
			err = &db.CorruptRowError{Table: "sessions", ID: out.SessionID, Err: e}
			continue
		}
		*c.dst = v
	}
	return err
}
