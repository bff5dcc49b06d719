package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Dialect is what differs between the SQL backends. Each db/<driver> package
// builds its own (sqlite.Dialect, postgres.Dialect, mysql.Dialect); the
// store and the migrate package use its parts and never its name, so a new
// backend is a new driver package with its DDL. Queries are written with "?"
// placeholders and go through Bind (the dialect's Rebind).
//
// A Dialect is checked once (Check, called by New and by migrate.New); a
// missing required part is an ErrIncompleteDialect there, never a silent
// fallback later.
type Dialect struct {
	// Name names the backend in messages and as db.Driver.Dialect. Required.
	Name string
	// Schema qualifies every table name; empty means unqualified. The store
	// and migrate create it when missing.
	Schema string
	// DDL holds one "<version>.sql" file per schema version the backend can
	// create (at least Version30), each with one "-- +table KIND" section
	// per table kind (see DDL). Required.
	DDL fs.FS

	// Quote quotes one identifier. Required.
	Quote func(ident string) string
	// Rebind turns "?" placeholders into the backend's; nil keeps them.
	Rebind func(query string) string

	// Upsert is the backend's insert-or-update syntax. Required.
	Upsert UpsertSyntax
	// RunUpsert is how UpsertRun and SaveRun serialise run_index assignment
	// within a session. Required.
	RunUpsert RunUpsert
	// LockSession is a statement, with the session id as its one argument,
	// that locks a session until the transaction ends (RunUpsertLockThenWrite
	// and RunUpsertLockReadWrite require it; the first executes it, the
	// second queries it and discards its rows).
	LockSession func(sessionsTable string) string
	// LockingSessionID, when not empty, is an expression with two ? placeholders
	// (the session id, then the same id as the lock's key) that takes
	// LockSession's lock and yields the session id. The session upsert
	// that opens a piped save assigning a run_index starts its VALUES with
	// it: the lock and the session's write are one statement, in the same
	// order as before (the lock first), and the run's upsert still starts
	// its snapshot after the lock (RunUpsertLockThenWrite).
	LockingSessionID string
	// TxOptions are the options of write transactions; nil means the
	// backend's default isolation.
	TxOptions *sql.TxOptions
	// JSONWithoutNUL drops the \u0000 escapes from the JSON the store
	// writes (Postgres: jsonb cannot hold U+0000 and refuses the whole
	// statement, so a run whose answer or tool result held a NUL was not
	// stored; Agno's Postgres writer removes NULs from every string too).
	JSONWithoutNUL bool
	// TextWithoutNUL drops the NUL bytes of the free-text values the store
	// writes to text columns (memory input and feedback, error and status
	// messages, knowledge names and descriptions, eval names): Postgres
	// text holds no U+0000 and refuses the whole statement (a trace batch
	// with one such span message was lost). Agno's Postgres writer strips
	// them too (sanitize_postgres_string). Ids are never changed.
	TextWithoutNUL bool
	// DuplicateKey reports an INSERT refused because a row with its primary
	// key exists. Required with OnDuplicateKey, where InsertIgnore is a
	// plain INSERT whose refusal for an existing key Inserted reads as "not
	// inserted" (INSERT IGNORE would also turn a value too long for its
	// column, a NULL in a NOT NULL column or a bad date into a warning and
	// store a changed row).
	DuplicateKey func(error) bool
	// RetryTx reports an error after which SaveRun retries its transaction
	// (a deadlock the server resolved by rolling it back); nil means never.
	RetryTx func(error) bool
	// SingleWriter says every write goes through one connection: writes
	// then queue in arrival order (writeGate), and a transaction's
	// statements are prepared before it takes the connection.
	SingleWriter bool
	// CacheStatements keeps prepared statements per pool; false when the
	// database/sql driver already caches them by text.
	CacheStatements bool
	// BindLimit binds LIMIT and OFFSET as arguments (the statement text
	// repeats across pages); false writes them as literals.
	BindLimit bool
	// IndexFirstPage reports whether a first page of a session's runs
	// (keyset: the page after a run_index) is read through the deferred
	// join on the (session_id, run_index) index rather than with one plain
	// query, as deeper pages always are; nil means always.
	IndexFirstPage func(keyset bool) bool

	// JSONField extracts a top-level string field of a JSON object column
	// as text. Required.
	JSONField func(col, field string) string
	// JSONString returns the text of a column holding a JSON string. Required.
	JSONString func(col string) string
	// JSONArrayHasAny is a condition true when a JSON array column holds any
	// of n strings, bound as n placeholders. Required.
	JSONArrayHasAny func(col string, n int) string
	// LikeContains is a case-insensitive substring condition on a text
	// expression with one placeholder for a ContainsPattern. Required.
	LikeContains func(expr string) string
	// ByteLength is the byte length of a text column's stored value, read
	// without loading the value (SQLite's octet_length); nil when the
	// backend has none (HistoryQuery.Cached is then checked by updated_at).
	ByteLength func(col string) string
	// NoIndex wraps a text column so that the planner cannot use an index on
	// it (comparisons keep their meaning); nil means the bare column.
	NoIndex func(col string) string
	// ForceIndex is a hint written after a table in FROM that makes the
	// planner use the named index; nil means no hint.
	ForceIndex func(index string) string
	// Exact is a condition, with one placeholder, true only when a text
	// column holds exactly the bound string, byte for byte (see EqExact);
	// nil means "col = ?", exact on backends whose = compares bytes.
	Exact func(col string) string
	// Bytes is an expression of a text column that groups and sorts byte
	// for byte (MySQL's case-insensitive collations of Agno's tables fold
	// "Alice" and "alice" into one group); nil means the bare column.
	Bytes func(col string) string

	// Types are the column types of the bookkeeping tables migrate creates
	// and of the columns it adds. Required.
	Types SQLTypes
	// Catalog looks tables, columns and indexes up. Required.
	Catalog Catalog
	// DDLInTx says a transaction can hold DDL (CREATE TABLE): table
	// creation then commits or rolls back as a whole.
	DDLInTx bool
	// LockSchema serialises openers that create tables: it takes the lock
	// named key on q (the transaction when DDLInTx, else the connection)
	// and returns its release; nil when the transaction is enough.
	LockSchema func(ctx context.Context, q Querier, key string) (release func(), err error)
	// Pipeline, when set, runs a transaction of statements on the writer in
	// two round trips: BEGIN and every statement are sent at once, their
	// results are read in order, then COMMIT (or ROLLBACK after the first
	// error) is sent. SaveRun uses it for a write with caller statements
	// (the durable queue's fences), or when the dialect has no Batch.
	// Statements carry "?" placeholders. nil means a transaction of one
	// round trip per statement.
	Pipeline func(ctx context.Context, pool *sql.DB, stmts []PipelineStmt) error
	// Batch, when set, sends statements on the writer in one round trip as
	// one implicit transaction, without BEGIN and COMMIT: the server
	// commits after the last statement succeeds and rolls everything back
	// at the first error. The results are read after the commit, so an
	// error a Row returns undoes nothing: only statements whose refusal is
	// a server error, or changes nothing, may go in a Batch. A run write
	// without caller statements uses it (Postgres: one round trip).
	Batch func(ctx context.Context, pool *sql.DB, stmts []PipelineStmt) error
	// QueryRows, when set, runs a query (placeholders already bound for the
	// dialect) on a connection of pool through the driver's own rows and
	// calls read with them; read closes them. A turn's history read and
	// GetSession use it (Store.readRows): database/sql watches the rows of
	// every query whose context can end with a goroutine of its own, which
	// the driver's rows do not need (Postgres: pgx watches the context with
	// context.AfterFunc). nil means database/sql's rows.
	QueryRows func(ctx context.Context, pool *sql.DB, q string, args []any, read func(Rows) error) error
	// LockMigration serialises migrations of one database across
	// processes, waiting up to timeout (then ErrMigrationLocked); a lock
	// dies with its holder. name identifies the database's tables. Required.
	LockMigration func(ctx context.Context, db *sql.DB, name string, timeout time.Duration) (release func(), err error)
	// WALCheckpoint runs one checkpoint of a write-ahead log on q (restart:
	// also empties the log, waiting for readers) and returns the log's
	// length in frames; the store's Config.CheckpointInterval requires it.
	WALCheckpoint func(ctx context.Context, q Querier, restart bool) (frames int64, err error)
	// DropIndex returns the statements that drop an index of a table.
	// Required.
	DropIndex func(table, index string) []string
	// Migration is what migrate's 2.x upgrade and its Down need to know
	// beyond the store's parts.
	Migration MigrationTraits
}

// UpsertSyntax is an insert-or-update syntax.
type UpsertSyntax int

const (
	// OnConflict is INSERT … ON CONFLICT (key) DO UPDATE SET col =
	// excluded.col [WHERE …] [RETURNING …], with an aliasable INSERT target,
	// and ON CONFLICT DO NOTHING.
	OnConflict UpsertSyntax = iota + 1
	// OnDuplicateKey is INSERT … ON DUPLICATE KEY UPDATE col = VALUES(col):
	// no guard clause, no RETURNING, and no insert-or-nothing (InsertIgnore
	// is a plain INSERT there, see DuplicateKey).
	OnDuplicateKey
)

// RunUpsert is a run-write strategy.
type RunUpsert int

const (
	// RunUpsertOneStatement writes a run with one INSERT … ON CONFLICT …
	// RETURNING whose run_index is a MAX subquery. The statement alone is
	// atomic only on a SingleWriter backend: it holds the write lock from
	// its first step.
	RunUpsertOneStatement RunUpsert = iota + 1
	// RunUpsertLockThenWrite runs the same statement after LockSession in a
	// transaction when a run_index is to be assigned (a READ COMMITTED
	// statement reads with the snapshot it started with, so it would miss a
	// run committed while it waited on a lock of its own).
	RunUpsertLockThenWrite
	// RunUpsertLockReadWrite locks the session (LockSession, a row lock),
	// reads the run and the next run_index in one statement, then updates
	// or inserts: for OnDuplicateKey backends.
	RunUpsertLockReadWrite
)

// SQLTypes are a backend's column types for the tables built outside the
// DDL files.
type SQLTypes struct {
	// Key is a string usable in a primary key or index; Text an unbounded
	// string; BigInt a 64-bit integer; JSON a JSON document.
	Key, Text, BigInt, JSON string
	// TableSuffix follows CREATE TABLE (…) (a character set); may be empty.
	TableSuffix string
}

// Catalog builds the catalog look-ups of a dialect. Each returns a query and
// its arguments.
type Catalog struct {
	// Tables counts the tables named table. Required.
	Tables func(table string) (string, []any)
	// Columns selects (name, type) of each column of table. Required.
	Columns func(table string) (string, []any)
	// Indexes counts the indexes named index on table. Required.
	Indexes func(table, index string) (string, []any)
	// PrimaryKeys counts the primary keys of table; nil when every table
	// the backend ever created has one.
	PrimaryKeys func(table string) (string, []any)
}

// ErrIncompleteDialect is returned when a Dialect lacks a required part or
// combines parts that cannot work together.
var ErrIncompleteDialect = errors.New("sqlstore: incomplete SQL dialect")

// ErrMigrationLocked is returned by a LockMigration whose wait timed out.
var ErrMigrationLocked = errors.New("migrate: another migration is running on this database; wait for it to finish and retry")

// Check reports every required part d lacks and every inconsistent choice,
// as one ErrIncompleteDialect.
func (d *Dialect) Check() error {
	if d == nil {
		return fmt.Errorf("%w: no dialect", ErrIncompleteDialect)
	}
	var bad []string
	need := func(ok bool, what string) {
		if !ok {
			bad = append(bad, what)
		}
	}
	need(d.Name != "", "Name")
	need(d.DDL != nil, "DDL")
	need(d.Quote != nil, "Quote")
	need(d.Upsert == OnConflict || d.Upsert == OnDuplicateKey, "Upsert")
	need(d.RunUpsert >= RunUpsertOneStatement && d.RunUpsert <= RunUpsertLockReadWrite, "RunUpsert")
	need(d.JSONField != nil, "JSONField")
	need(d.JSONString != nil, "JSONString")
	need(d.JSONArrayHasAny != nil, "JSONArrayHasAny")
	need(d.LikeContains != nil, "LikeContains")
	need(d.Types.Key != "" && d.Types.Text != "" && d.Types.BigInt != "" && d.Types.JSON != "", "Types")
	need(d.Catalog.Tables != nil, "Catalog.Tables")
	need(d.Catalog.Columns != nil, "Catalog.Columns")
	need(d.Catalog.Indexes != nil, "Catalog.Indexes")
	need(d.LockMigration != nil, "LockMigration")
	need(d.DropIndex != nil, "DropIndex")
	switch d.RunUpsert {
	case RunUpsertOneStatement:
		need(d.SingleWriter, "SingleWriter (RunUpsertOneStatement is atomic only on a single writer)")
		need(d.Upsert == OnConflict, "Upsert OnConflict (RunUpsertOneStatement needs ON CONFLICT … RETURNING)")
	case RunUpsertLockThenWrite:
		need(d.LockSession != nil, "LockSession (RunUpsertLockThenWrite)")
		need(d.Upsert == OnConflict, "Upsert OnConflict (RunUpsertLockThenWrite needs ON CONFLICT … RETURNING)")
	case RunUpsertLockReadWrite:
		need(d.LockSession != nil, "LockSession (RunUpsertLockReadWrite)")
	}
	if d.Upsert == OnDuplicateKey {
		need(d.RunUpsert == RunUpsertLockReadWrite, "RunUpsert LockReadWrite (OnDuplicateKey has no RETURNING)")
		need(d.DuplicateKey != nil, "DuplicateKey (OnDuplicateKey's InsertIgnore is a plain INSERT)")
	}
	if d.DDL != nil {
		bad = append(bad, missingDDL(d.DDL)...)
	}
	if len(bad) > 0 {
		name := d.Name
		if name == "" {
			name = "unnamed"
		}
		return fmt.Errorf("%w: %s dialect lacks %s", ErrIncompleteDialect, name, strings.Join(bad, ", "))
	}
	return nil
}

// missingDDL names what the DDL lacks: the Version30 file, or in it a
// section for a table kind.
func missingDDL(ddl fs.FS) []string {
	src, err := fs.ReadFile(ddl, Version30+".sql")
	if err != nil {
		return []string{"DDL file " + Version30 + ".sql"}
	}
	have := map[string]bool{}
	for _, section := range strings.Split(string(src), ddlSection)[1:] {
		name, _, _ := strings.Cut(section, "\n")
		have[strings.TrimSpace(name)] = true
	}
	var out []string
	for _, k := range Kinds {
		if !have[k] {
			out = append(out, "DDL section "+Version30+".sql "+ddlSection+k)
		}
	}
	return out
}

// Table returns the quoted, schema-qualified name of a table.
func (d *Dialect) Table(name string) string {
	if d.Schema != "" {
		return d.Quote(d.Schema) + "." + d.Quote(name)
	}
	return d.Quote(name)
}

// Bind rebinds "?" placeholders for the backend (Rebind, when set).
func (d *Dialect) Bind(q string) string {
	if d.Rebind == nil {
		return q
	}
	return d.Rebind(q)
}

// InsertIgnore returns an INSERT that does nothing when the primary key
// (conflictCols) already exists; run it and pass its outcome to Inserted,
// which tells which happened. On OnDuplicateKey backends it is a plain
// INSERT whose duplicate-key error Inserted reads: MySQL has no
// insert-or-nothing that keeps other errors (INSERT IGNORE stores a value
// too long for its column cut, and ON DUPLICATE KEY UPDATE key = key counts
// an existing row as written under CLIENT_FOUND_ROWS).
func (d *Dialect) InsertIgnore(table string, cols []string, conflictCols ...string) string {
	ph := placeholders(len(cols))
	if d.Upsert == OnDuplicateKey {
		return fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s)", table, strings.Join(cols, ", "), ph)
	}
	return fmt.Sprintf("INSERT INTO %s (%s) VALUES (%s) ON CONFLICT (%s) DO NOTHING",
		table, strings.Join(cols, ", "), ph, strings.Join(conflictCols, ", "))
}

// Inserted reads the outcome of an InsertIgnore statement: whether it
// inserted its row. A refusal for an existing primary key is not an error;
// every other error is returned. In a transaction the refused statement
// alone is undone (MySQL), or nothing was refused (ON CONFLICT).
func (d *Dialect) Inserted(res sql.Result, err error) (bool, error) {
	if err != nil {
		if d.DuplicateKey != nil && d.DuplicateKey(err) {
			return false, nil
		}
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// InsertIgnoreRows wraps a multi-row INSERT (values holds the rows) so that a
// row whose key (conflict) exists is skipped; anyKey is one key column. On
// OnDuplicateKey backends the skip is an update of anyKey to itself: other
// errors stay errors, but RowsAffected counts a skipped row as written
// (CLIENT_FOUND_ROWS), so it tells nothing there.
func (d *Dialect) InsertIgnoreRows(table, cols, values, conflict, anyKey string) string {
	if d.Upsert == OnDuplicateKey {
		return "INSERT INTO " + table + " (" + cols + ") VALUES " + values +
			" ON DUPLICATE KEY UPDATE " + anyKey + " = " + anyKey
	}
	return "INSERT INTO " + table + " (" + cols + ") VALUES " + values +
		" ON CONFLICT (" + conflict + ") DO NOTHING"
}

// UpsertRow returns an INSERT of cols into table that, when a row with the
// key conflict exists, sets each of set to the inserted value instead.
func (d *Dialect) UpsertRow(table string, cols, conflict, set []string) string {
	q := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES (" + placeholders(len(cols)) + ")"
	parts := make([]string, len(set))
	if d.Upsert == OnDuplicateKey {
		for i, c := range set {
			parts[i] = c + " = VALUES(" + c + ")"
		}
		return q + " ON DUPLICATE KEY UPDATE " + strings.Join(parts, ", ")
	}
	for i, c := range set {
		parts[i] = c + " = excluded." + c
	}
	return q + " ON CONFLICT (" + strings.Join(conflict, ", ") + ") DO UPDATE SET " + strings.Join(parts, ", ")
}

// ByteKey is col as Bytes spells it: an expression that groups byte for
// byte.
func (d *Dialect) ByteKey(col string) string {
	if d.Bytes == nil {
		return col
	}
	return d.Bytes(col)
}

// EqExact is a condition, with one placeholder, true only when col holds
// exactly the bound string. The user scope and every other user_id equality
// go through it: MySQL's = pads with spaces (even utf8mb4_bin matches
// 'alice' to 'alice ') and Agno's MySQL tables compare case-insensitively,
// so a plain = would let user "alice " or "Alice" read alice's rows.
func (d *Dialect) EqExact(col string) string {
	if d.Exact == nil {
		return col + " = ?"
	}
	return d.Exact(col)
}

// noIndex applies NoIndex.
func (d *Dialect) noIndex(col string) string {
	if d.NoIndex == nil {
		return col
	}
	return d.NoIndex(col)
}

// forceIndex returns table followed by the hint to use index, if any.
func (d *Dialect) forceIndex(table, index string) string {
	if d.ForceIndex == nil {
		return table
	}
	return table + " " + d.ForceIndex(index)
}

// ContainsPattern builds the LIKE pattern for LikeContains: lower case, with
// backslash escaping % and _.
func ContainsPattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(s)) + "%"
}

// QuoteDouble quotes an identifier in double quotes (standard SQL).
func QuoteDouble(ident string) string {
	return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"`
}

// RebindDollar numbers placeholders $1, $2, …. Queries built by the store
// never contain a literal "?" outside placeholders.
//
// The stores and the durable queue send a fixed set of query texts (a few
// hundred), each rebound on every execution; the results are kept
// (maxRebound texts at most, for texts built per call such as IN lists of
// any length), so a repeated text costs a map lookup and no allocation.
func RebindDollar(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	rebound.mu.RLock()
	out, ok := rebound.m[q]
	rebound.mu.RUnlock()
	if ok {
		return out
	}
	out = rebindDollar(q)
	rebound.mu.Lock()
	if len(rebound.m) < maxRebound {
		if rebound.m == nil {
			rebound.m = map[string]string{}
		}
		rebound.m[q] = out
	}
	rebound.mu.Unlock()
	return out
}

// maxRebound bounds the texts RebindDollar keeps.
const maxRebound = 4096

// rebound is RebindDollar's memo: query text → rebound text.
var rebound struct {
	mu sync.RWMutex
	m  map[string]string
}

// rebindDollar is RebindDollar without the memo.
func rebindDollar(q string) string {
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

// hasPrefix is a case-sensitive prefix condition on a text column, bound to
// prefixArgs (LIKE is case-insensitive on SQLite and MySQL collations vary;
// substr is standard on every backend).
func hasPrefix(col string) string {
	return "substr(" + col + ", 1, ?) = ?"
}

// prefixArgs binds hasPrefix: the prefix's length in characters, and it.
func prefixArgs(prefix string) []any {
	return []any{utf8.RuneCountInString(prefix), prefix}
}

// PipelineStmt is one statement of a Dialect.Pipeline.
type PipelineStmt struct {
	Query string
	Args  []any
	// Row reads the statement's one row (its Scan returns sql.ErrNoRows
	// when there is none); nil executes the statement and drops its result.
	// An error it returns rolls the transaction back and is the pipeline's.
	Row func(sc Scanner) error
	// Session, on the first statement of a write's session part (the
	// session's lock, its upsert and the run's upsert, which end the
	// write), names the session those statements lock. A dialect that
	// shares one transaction among concurrent callers' writes sends every
	// member's session part after all the members' other statements, in
	// session order, so that session rows are locked in one order by
	// every transaction (see db/postgres/pipegroup.go).
	Session string
}

// Scanner reads one row.
type Scanner interface{ Scan(dest ...any) error }
