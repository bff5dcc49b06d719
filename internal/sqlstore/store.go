package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentryhq/agentry/db"
)

// Config assembles a Store; the driver packages fill it.
type Config struct {
	// Dialect is the backend's SQL, built by its driver package. Required;
	// New fails with ErrIncompleteDialect when it lacks a part.
	Dialect *Dialect
	Tables  Tables
	// Writer runs every write. For SQLite it is a single connection whose
	// transactions begin IMMEDIATE, which serialises run_index assignment.
	Writer *sql.DB
	// Reader serves reads; nil means Writer.
	Reader *sql.DB
	// SkipSchemaCheck opens without checking, creating or stamping tables. The
	// migrate package uses it to open a 2.x database it is about to upgrade.
	SkipSchemaCheck bool
	// ReadOnly checks the schema without creating anything: a database
	// without the sessions and runs tables is an error (ErrNoTables).
	ReadOnly bool
	// WrapError, when set, turns backend errors into clearer ones (for example
	// SQLite's "file is not a database").
	WrapError func(error) error
	// OpenMigrationPool, when set, opens a separate pool for a migration (which
	// holds a lock, a reader and a writer at once); nil means Writer serves.
	OpenMigrationPool func() (*sql.DB, error)
	// CheckpointInterval, when positive, runs a passive WAL checkpoint on
	// Reader at this interval until Close (the sqlite driver sets it). SQLite checkpoints
	// on its own after commits; this backstop keeps the WAL bounded when
	// that does not happen (a reader that held an old snapshot at the time).
	CheckpointInterval time.Duration
	// ChangeCounter, when set, reads the database's version: its low 32
	// bits count the commits of every connection and process (SQLite's
	// WAL index iChange), the rest may tell versions apart further (the
	// WAL's length); ok is false when it cannot be read now. With it a
	// SQLite store answers a conversation's next history read from the
	// previous one and its own run write (historyCache).
	ChangeCounter func() (n uint64, ok bool)
	// MaxRunData, when positive, is the longest run_data a run write
	// sends: a longer one is db.ErrInvalidRecord before it is sent. MySQL
	// sets it below max_allowed_packet, over which the server closes the
	// connection, which the driver may report as a lost one (a caller would
	// retry the same write as db.ErrUnavailable).
	MaxRunData int
}

// Store implements db.Driver over database/sql for one dialect.
type Store struct {
	// seenTables caches sessionTablesOf once both tables were seen: the
	// queue and the run log create them on first use and never drop them.
	seenTables atomic.Bool
	d          *Dialect
	t          Tables
	w, r       *sql.DB
	maxRunData int    // Config.MaxRunData
	sessions   string // quoted, qualified table names
	runs       string
	memories   string
	fs         string
	results    string
	steps      string
	learning   string
	approvs    string
	wrap       func(error) error
	stmts      stmtCache
	migPool    func() (*sql.DB, error)
	readOnly   bool
	// gate orders run and session writes (SQLite only; see writeGate).
	gate writeGate
	// group batches concurrent run writes into one transaction (SQLite
	// only; see groupCommit).
	group groupCommit
	// The hot upsert statements, built once: upsertRunQ[1] carries the scope
	// guard (see buildUpsertRunSQL).
	upsertRunQ [2]string
	// afterSessionQ is upsertRunQ for a Batch after the session's upsert
	// (buildUpsertRunAfterSessionSQL); empty without a Batch.
	afterSessionQ  [2]string
	upsertSessionQ string
	// updateSessionQ, on SQLite only, is tried before upsertSessionQ
	// (buildUpdateSessionSQL).
	updateSessionQ string
	// upsertSessionCreatedQ, on SQLite only, is upsertSessionQ returning
	// created_at alone (writtenSession makes the rest).
	upsertSessionCreatedQ string
	lockSessionQ          string // "" unless the dialect locks sessions
	// lockingSessionQ is upsertSessionQ taking lockSessionQ's lock first
	// (Dialect.LockingSessionID; "" without; its arguments: pipedSessionPart).
	lockingSessionQ string
	// cas are the conditional session writes (sessioncas.go).
	cas          casStmts
	historyConds historyConds
	historyTexts historyTexts
	// runsOnIndex is the runs table with the dialect's hint to use the
	// (session_id, run_index) index, runsFOnIndex the same aliased f.
	runsOnIndex, runsFOnIndex string
	// stopCheckpoints ends the periodic checkpoint and waits for it; nil
	// when none runs.
	stopCheckpoints func()
	// hc answers history reads from the previous one (SQLite with a
	// Config.ChangeCounter); nil otherwise.
	hc *historyCache
}

var (
	_ db.Driver = (*Store)(nil)
	_ db.Pinger = (*Store)(nil)
)

// New checks (or creates) the schema and returns the store. On error the
// caller still owns and must close the *sql.DBs.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Writer == nil {
		return nil, errors.New("sqlstore: Config.Writer is required")
	}
	if err := cfg.Dialect.Check(); err != nil {
		return nil, err
	}
	if cfg.CheckpointInterval > 0 && cfg.Dialect.WALCheckpoint == nil {
		return nil, fmt.Errorf("%w: Config.CheckpointInterval needs the %s dialect's WALCheckpoint", ErrIncompleteDialect, cfg.Dialect.Name)
	}
	d := *cfg.Dialect // the store's own copy: the caller cannot change it later
	s := &Store{d: &d, t: cfg.Tables.WithDefaults(), w: cfg.Writer, r: cfg.Reader, wrap: cfg.WrapError, migPool: cfg.OpenMigrationPool,
		readOnly: cfg.ReadOnly, gate: newWriteGate(&d), maxRunData: cfg.MaxRunData}
	s.group = newGroupCommit(s)
	if cfg.ChangeCounter != nil && s.gate != nil && !cfg.ReadOnly {
		s.hc = newHistoryCache(cfg.ChangeCounter)
	}
	if s.r == nil {
		s.r = s.w
	}
	if s.wrap == nil {
		s.wrap = func(err error) error { return err }
	}
	s.sessions = d.Table(s.t.Sessions)
	s.runs = d.Table(s.t.Runs)
	s.memories = d.Table(s.t.Memories)
	s.fs = d.Table(s.t.FS)
	s.results = d.Table(s.t.ToolResults)
	s.steps = d.Table(s.t.RunSteps)
	s.learning = d.Table(s.t.Learnings)
	s.approvs = d.Table(s.t.Approvals)
	s.upsertRunQ = [2]string{s.buildUpsertRunSQL(false), s.buildUpsertRunSQL(true)}
	s.upsertSessionQ = s.buildUpsertSessionSQL("?")
	s.historyConds = s.buildHistoryConds()
	if d.Name == "sqlite" { // Postgres and InnoDB leave unchanged index entries alone
		s.updateSessionQ = s.buildUpdateSessionSQL()
		// SQLite's TEXT columns hold what was written: only created_at
		// need be read back (Postgres normalises JSONB).
		s.upsertSessionCreatedQ = strings.TrimSuffix(s.upsertSessionQ, "RETURNING "+sessionCols) + "RETURNING created_at"
	}
	if d.Batch != nil {
		s.afterSessionQ = [2]string{s.buildUpsertRunAfterSessionSQL(false), s.buildUpsertRunAfterSessionSQL(true)}
	}
	if d.LockSession != nil {
		s.lockSessionQ = d.LockSession(s.sessions)
	}
	if d.LockingSessionID != "" && d.RunUpsert == RunUpsertLockThenWrite {
		s.lockingSessionQ = s.buildUpsertSessionSQL(d.LockingSessionID)
	}
	s.cas = s.buildCasStmts()
	idx := "idx_" + s.t.Runs + "_session_id_run_index"
	s.runsOnIndex, s.runsFOnIndex = d.forceIndex(s.runs, idx), d.forceIndex(s.runs+" f", idx)
	switch {
	case cfg.SkipSchemaCheck:
	case cfg.ReadOnly:
		if err := checkReadable(ctx, s.r, s.d, s.t); err != nil {
			return nil, s.wrap(err)
		}
	default:
		if err := EnsureSchema(ctx, s.w, s.d, s.t); err != nil {
			return nil, s.wrap(err)
		}
	}
	if cfg.CheckpointInterval > 0 {
		s.stopCheckpoints = s.checkpointEvery(cfg.CheckpointInterval)
	}
	return s, nil
}

// ErrNoTables is returned by a read-only open of a database that lacks the
// sessions or runs table: nothing was ever stored there.
var ErrNoTables = errors.New("the database has no Agentry tables")

// checkReadable is the read-only open's schema check: the layout must be a
// known 3.0 one (db.ErrMigrationRequired otherwise) and hold the sessions
// and runs tables; other missing tables are created by the next writer.
func checkReadable(ctx context.Context, q Querier, d *Dialect, t Tables) error {
	missing, err := CheckSchema(ctx, q, d, t)
	if err != nil {
		return err
	}
	var lack []string
	for _, k := range missing {
		if k == KindSessions || k == KindRuns {
			lack = append(lack, t.Name(k))
		}
	}
	if len(lack) > 0 {
		where := ""
		if d.Schema != "" {
			where = " in schema " + d.Schema
		}
		return fmt.Errorf("%w (no %s%s): nothing was stored there; check the DSN, or let `agentry serve` create them",
			ErrNoTables, strings.Join(lack, " or "), where)
	}
	return nil
}

// FromDB returns the Store behind a *db.DB opened by one of the SQL drivers.
func FromDB(d *db.DB) (*Store, bool) {
	s, ok := d.Driver().(*Store)
	return s, ok
}

// SQL returns the *sql.DB that performs writes (for tests).
func (s *Store) SQL() *sql.DB { return s.w }

var _ db.SQLBacked = (*Store)(nil)

// SQLTarget lends the database to a schema migration while the store stays
// open. SQLite's writer is a single connection, so there a separate small
// pool is opened on the same file (read-only when the store is).
func (s *Store) SQLTarget() (db.SQLTarget, error) {
	t := db.SQLTarget{DB: s.w, Release: func() {}, ReadOnly: s.readOnly}
	if s.migPool != nil {
		p, err := s.migPool()
		if err != nil {
			return db.SQLTarget{}, s.wrap(err)
		}
		t.DB, t.Release = p, func() { p.Close() }
	}
	return t, nil
}

// ReadSQL returns the *sql.DB that serves reads.
func (s *Store) ReadSQL() *sql.DB { return s.r }

// SQLDialect returns the dialect.
func (s *Store) SQLDialect() *Dialect { return s.d }

// Tables returns the table names in use.
func (s *Store) Tables() Tables { return s.t }

// Dialect names the backend.
func (s *Store) Dialect() string { return s.d.Name }

// Ping reaches the writer pool and, when separate, the reader pool
// (db.Pinger: the readiness check).
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return s.fail("ping", err)
	}
	if s.r != s.w {
		if err := s.r.PingContext(ctx); err != nil {
			return s.fail("ping", err)
		}
	}
	return nil
}

// Close closes the connection pools.
func (s *Store) Close() error {
	if s.stopCheckpoints != nil {
		s.stopCheckpoints()
	}
	err := errors.Join(s.stmts.close(), s.w.Close())
	if s.r != s.w {
		err = errors.Join(err, s.r.Close())
	}
	return err
}

// where accumulates AND-ed conditions and their arguments.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

func (w *where) eq(col, v string) {
	if v != "" {
		w.add(col+" = ?", v)
	}
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// scope adds the context's user scope to a query: user_id equal to the
// scope's user, exactly (Dialect.EqExact).
func (s *Store) scope(ctx context.Context, w *where) {
	if u, ok := db.UserScope(ctx); ok {
		w.add(s.d.EqExact("user_id"), u)
	}
}

// userEq adds "col equals user" when user is not empty (a filter's user
// id), compared exactly as the scope is.
func (s *Store) userEq(w *where, col, user string) {
	if user != "" {
		w.add(s.d.EqExact(col), user)
	}
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

func anys[T ~string](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}

// text is a free-text column's value, without its NUL bytes where the
// dialect says TextWithoutNUL.
func (s *Store) text(v string) string {
	if s.d.TextWithoutNUL && strings.IndexByte(v, 0) >= 0 {
		return strings.ReplaceAll(v, "\x00", "")
	}
	return v
}

// nullText is text for a nullable column: empty is SQL NULL.
func (s *Store) nullText(v string) any { return nullStr(s.text(v)) }

func nullStr(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (s *Store) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, db.ErrNotFound) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%s %s: %w", s.d.Name, op, s.wrap(err))
}

func offset(limit, page int) int { return limit * (page - 1) }
