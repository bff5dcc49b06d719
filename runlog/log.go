package runlog

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

// createdAtIndex serves retention's range of old events.
const createdAtIndex = "idx_agentry_run_events_created_at"

// Table is the event log's table name. Deleting a session through the db
// (db.DB.DeleteSessions) deletes its runs' events in the same transaction.
const Table = sqlstore.RunEventsTable

// ErrUnsupported: the database lends no SQL writer (the memory driver).
var ErrUnsupported = errors.New("runlog: the run event log needs a sqlite, postgres or mysql database")

// Record is one stored event of a run.
type Record struct {
	// Seq is the event's index in its run, from 0, gapless and increasing
	// across attempts: the SSE id and Agno's event_index.
	Seq int64
	// Attempt is the job attempt that produced the event (1 for runs that
	// are not on the durable queue); 0 for a terminal event a server built
	// from the run's row because its producer ended without one
	// (AppendAt).
	Attempt int
	// Event is the event's name (RunContent, TeamRunCompleted, …).
	Event string
	// Data is the event's JSON as the stream sends it.
	Data []byte
	// Final marks the run's own terminal event (completed, error,
	// cancelled, paused): the stream ends after it.
	Final bool
}

// Log is the event log of one database. It is safe for concurrent use.
type Log struct {
	// w writes (on SQLite the store's single writer connection, whose
	// transactions begin IMMEDIATE); r reads: the store's reader pool, so
	// that subscribers' polls do not queue behind (or hold up) the
	// process's writes on SQLite. On Postgres and MySQL they are one pool.
	w, r    *sql.DB
	dialect string
	table   string
	// runs and jobs are the store's runs and jobs tables, qualified
	// (State); runs is empty when the driver is not sqlstore's.
	runs, jobs string
	// jobsSeen: the jobs table exists (hasJobs).
	jobsSeen atomic.Bool
	// timeout bounds each call (the store's query timeout; <= 0: none).
	timeout time.Duration
	// maxStmt is the most bytes one packet may carry (MySQL's
	// max_allowed_packet: the driver sends a large value in a packet of
	// its own); 0: no limit the log needs to mind.
	maxStmt int

	mu    sync.Mutex
	wakes map[string]*watch // runs this process's subscribers follow
}

// watch is the wake-up channel of a run with subscribers in this process:
// closed (and replaced) at each append.
type watch struct {
	ch   chan struct{}
	subs int
}

// Open creates the log's table (idempotent) in d's database.
func Open(ctx context.Context, d *db.DB) (*Log, error) {
	sw, ok := d.Driver().(db.SQLWriter)
	if !ok {
		return nil, ErrUnsupported
	}
	wp := sw.SQLWriter()
	l := &Log{w: wp.DB, r: wp.DB, dialect: wp.Dialect, table: `"` + Table + `"`, timeout: d.QueryTimeout(), wakes: map[string]*watch{}}
	if st, ok := sqlstore.FromDB(d); ok && st.ReadSQL() != nil {
		l.r = st.ReadSQL()
	}
	l.storeTables(d)
	switch wp.Dialect {
	case "postgres":
		if wp.Schema != "" {
			l.table = `"` + wp.Schema + `".` + l.table
		}
	case "mysql":
		l.table = "`" + Table + "`"
	case "sqlite":
	default:
		return nil, fmt.Errorf("%w (this one is %s)", ErrUnsupported, wp.Dialect)
	}
	if err := l.migrate(ctx, wp.Schema); err != nil {
		return nil, fmt.Errorf("runlog: create table: %w", err)
	}
	if l.dialect == "mysql" {
		// The server drops the connection of a packet larger than this: an
		// event that cannot fit is refused (a recorder stores a marker).
		if err := l.w.QueryRowContext(ctx, `SELECT @@max_allowed_packet`).Scan(&l.maxStmt); err != nil {
			return nil, fmt.Errorf("runlog: read max_allowed_packet: %w", err)
		}
	}
	return l, nil
}

// packetOverhead is what a packet carries besides an event's JSON.
const packetOverhead = 16 << 10

// maxData is the largest event JSON the database stores (0: no limit).
func (l *Log) maxData() int {
	if l.maxStmt <= 0 {
		return 0
	}
	return max(l.maxStmt-packetOverhead, 1)
}

// ErrEventTooLarge: an event larger than the database takes in one packet
// (MySQL's max_allowed_packet).
var ErrEventTooLarge = errors.New("runlog: event larger than the database stores in one statement")

func (l *Log) migrate(ctx context.Context, schema string) error {
	idType, textType, dataType, suffix := "TEXT", "TEXT", "TEXT", ""
	switch l.dialect {
	case "mysql":
		idType, textType, dataType = "VARCHAR(255)", "VARCHAR(255)", "LONGTEXT"
		// Not the database's default character set, which may be one
		// (latin1) that refuses an event's emoji or CJK text under the
		// strict mode the store's connections use: utf8mb4, as the
		// store's own tables.
		suffix = " DEFAULT CHARSET=utf8mb4"
	}
	var stmts []string
	if l.dialect == "postgres" && schema != "" {
		stmts = append(stmts, `CREATE SCHEMA IF NOT EXISTS "`+schema+`"`)
	}
	stmts = append(stmts, `CREATE TABLE IF NOT EXISTS `+l.table+` (
	run_id `+idType+` NOT NULL,
	seq BIGINT NOT NULL,
	attempt BIGINT NOT NULL,
	event `+textType+` NOT NULL,
	data `+dataType+` NOT NULL,
	final SMALLINT NOT NULL DEFAULT 0,
	created_at BIGINT NOT NULL,
	PRIMARY KEY (run_id, seq)
)`+suffix)
	if l.dialect != "mysql" {
		stmts = append(stmts, `CREATE INDEX IF NOT EXISTS `+createdAtIndex+` ON `+l.table+` (created_at)`)
	}
	if l.dialect == "postgres" {
		return l.migratePostgres(ctx, schema, stmts)
	}
	for _, s := range stmts {
		if _, err := l.w.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	if l.dialect == "mysql" {
		// MySQL has no CREATE INDEX IF NOT EXISTS: a duplicate is fine.
		_, err := l.w.ExecContext(ctx, `CREATE INDEX `+createdAtIndex+` ON `+l.table+` (created_at)`)
		if err != nil && !strings.Contains(err.Error(), "Duplicate key name") {
			return err
		}
		return l.utf8mb4(ctx)
	}
	return nil
}

// migratePostgres runs the log's DDL in one transaction that first takes
// a transaction-scoped advisory lock of the table's schema: Postgres's IF
// NOT EXISTS does not keep two sessions creating the same table or index
// at once apart (the later one fails on the catalog's unique index,
// pg_type or pg_class), so replicas opening the log of a new database
// together take turns, and the later ones find the table there.
func (l *Log) migratePostgres(ctx context.Context, schema string, stmts []string) error {
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, Table+":"+schema); err != nil {
		return err
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// utf8mb4 converts a MySQL event table an earlier version created in the
// database's default character set (latin1 on many servers, where an
// event's emoji or CJK text failed its append) to utf8mb4, once. A
// conversion the database refuses (a user without the ALTER privilege)
// leaves the table as it was, as before: the log still stores the events
// the table's character set holds, and an append of another fails with
// the server's error.
func (l *Log) utf8mb4(ctx context.Context) error {
	var cs sql.NullString
	err := l.w.QueryRowContext(ctx, `SELECT character_set_name FROM information_schema.columns
WHERE table_schema = DATABASE() AND table_name = ? AND column_name = 'data'`, Table).Scan(&cs)
	if err != nil || cs.String == "utf8mb4" {
		return err
	}
	_, err = l.w.ExecContext(ctx, `ALTER TABLE `+l.table+` CONVERT TO CHARACTER SET utf8mb4`)
	var me *gomysql.MySQLError
	if errors.As(err, &me) && (me.Number == 1142 || me.Number == 1044 || me.Number == 1227) {
		return nil // ALTER, database or privilege denied
	}
	if err != nil {
		return fmt.Errorf("convert %s from %s to utf8mb4: %w", Table, cs.String, err)
	}
	return nil
}

// bound gives one call of the log the store's query timeout, as db.DB
// bounds the store's own calls: the log reaches the database's pools
// directly, and without it a stalled database would block for ever the
// run's terminal event (which the run waits for), a subscriber's poll,
// and retention (whose loop a server's shutdown waits for). The deadline's
// cause tells the query timeout from the caller's own deadline.
func (l *Log) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, l.timeout, errQueryTimeout)
}

// errQueryTimeout is the cause of a call's end by the query timeout.
var errQueryTimeout = errors.New("runlog: query timeout")

// unavailable maps a call's error as db.DB maps the store's (db's bound):
// db.ErrUnavailable when the query timeout ended it (naming the timeout)
// or its connection was refused or lost, not when the caller's own context
// ended it (db.MarkUnavailableFor); ctx is the call's bounded context, not
// yet cancelled.
func (l *Log) unavailable(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, db.ErrUnavailable) {
		return err
	}
	if context.Cause(ctx) == errQueryTimeout {
		if !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
		}
		return fmt.Errorf("%w: runlog: no answer within %s (raise the query timeout if the database is only slow): %w", db.ErrUnavailable, l.timeout, err)
	}
	return db.MarkUnavailableFor(ctx, err)
}

// q rebinds ? placeholders for Postgres.
func (l *Log) q(s string) string {
	if l.dialect != "postgres" {
		return s
	}
	var b strings.Builder
	n := 0
	for _, r := range s {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Pending is an event not stored yet.
type Pending struct {
	Event string
	Data  []byte
	Final bool
}

// Append stores evs as the run's next events, numbered after the last
// stored one, in one transaction that runs fence first (nil: none). The
// durable queue's fence (db.WriteFence) refuses the write of an attempt
// that lost its lease, so the log only holds events of the attempt that owns
// the run: numbering stays gapless across attempts.
//
// Two appends of one run at once (no fence orders them: two replicas, a
// write retried while the first is in flight) may read the same last seq;
// the later one then meets the first's key and is written again after it,
// so neither loses its events (up to appendTries times). The query timeout
// bounds the whole call, its retries included.
func (l *Log) Append(ctx context.Context, runID string, attempt int, evs []Pending, fence db.TxFunc) error {
	_, err := l.appendAt(ctx, runID, attempt, evs, fence, -1)
	return err
}

// appendAt is Append that also returns the seq of the first event: the one
// it stored, or, when the commit failed, the one it would have stored (the
// server may have committed, or still commit, after the connection was
// lost); -1 when the write failed before its commit, so nothing was
// stored. at >= 0 writes the events from seq at or not at all: when the
// log's next seq is another, it fails with ErrSeqMoved, and a key it meets
// is not written again after (the caller looks whose events hold it).
func (l *Log) appendAt(ctx context.Context, runID string, attempt int, evs []Pending, fence db.TxFunc, at int64) (int64, error) {
	if len(evs) == 0 {
		return -1, nil
	}
	if limit := l.maxData(); limit > 0 {
		for _, ev := range evs {
			if len(ev.Data)+len(ev.Event) > limit {
				return -1, fmt.Errorf("%w: %s event of %d bytes with its name (the limit is %d; raise max_allowed_packet)", ErrEventTooLarge, ev.Event, len(ev.Data)+len(ev.Event), limit)
			}
		}
	}
	// One deadline for every try: the writes an append retries after
	// losing its seqs do not each get the query timeout again.
	ctx, cancel := l.bound(ctx)
	defer cancel()
	for try := 1; ; try++ {
		// A retry on Postgres queues behind the run's other appends on
		// an advisory lock; the first try takes none (two appends of one
		// run at once are rare: it would cost every append a round trip).
		start, err := l.append(ctx, runID, attempt, evs, fence, try > 1, at)
		if err == nil {
			l.wake(runID)
			return start, nil
		}
		if try == appendTries || !seqTaken(err) || ctx.Err() != nil || at >= 0 {
			return start, l.unavailable(ctx, err)
		}
	}
}

// ErrSeqMoved: a write meant for given seqs found the log's next seq
// elsewhere (another append came first).
var ErrSeqMoved = errors.New("runlog: the log's next seq is not the one the write was for")

// AppendAt stores evs as the run's events from seq at (the number of events
// the caller read), or nothing when the log holds another number of events
// by then (ErrSeqMoved: another append came first; read the log again).
// It is how a server stores a terminal event it built from a finished
// run's row when the log ended without one: the event gets a seq of its
// own, so that its id never names a later event of the run, and two
// servers doing so at once store it once.
func (l *Log) AppendAt(ctx context.Context, runID string, attempt int, at int64, evs []Pending) error {
	if at < 0 {
		return fmt.Errorf("%w: %d (the first seq is 0)", ErrBadIndex, at)
	}
	_, err := l.appendAt(ctx, runID, attempt, evs, nil, at)
	if err != nil && !errors.Is(err, ErrSeqMoved) && seqTaken(err) {
		// The key was written meanwhile (committed or in flight).
		err = fmt.Errorf("%w: %w", ErrSeqMoved, err)
	}
	return err
}

// appendTries bounds the writes of one Append that lose the race for
// their seq numbers: each loss means another append of the run committed.
const appendTries = 100

// seqTaken recognises a write that met another's (run_id, seq) (or, on
// MySQL, deadlocked with it on the key's gap lock).
func seqTaken(err error) bool {
	if sqlstore.IsUniqueViolation(err) {
		return true
	}
	m := err.Error()
	return strings.Contains(m, "Error 1213") || strings.Contains(m, "SQLSTATE 40P01")
}

// append is one try of appendAt, within appendAt's bound ctx.
func (l *Log) append(ctx context.Context, runID string, attempt int, evs []Pending, fence db.TxFunc, queue bool, at int64) (start int64, err error) {
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return -1, err
	}
	defer tx.Rollback()
	if fence != nil {
		if err := fence(ctx, tx); err != nil {
			return -1, err
		}
	}
	if queue && l.dialect == "postgres" {
		// Appends of one run that collided queue here rather than collide
		// again on its next seq (Read Committed gives each the same MAX);
		// SQLite's transactions are serial already, MySQL's retry
		// (seqTaken).
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1, 7417))`, "agentry_run_events:"+runID); err != nil {
			return -1, err
		}
	}
	var next int64
	if err := tx.QueryRowContext(ctx, l.q(`SELECT COALESCE(MAX(seq), -1) + 1 FROM `+l.table+` WHERE run_id = ?`), runID).Scan(&next); err != nil {
		return -1, err
	}
	if at >= 0 && next != at {
		return -1, ErrSeqMoved
	}
	first := next
	now := time.Now().Unix()
	const per = 7
	for start := 0; start < len(evs); {
		part := evs[start:l.chunkEnd(runID, evs, start)]
		start += len(part)
		var b strings.Builder
		b.WriteString(`INSERT INTO ` + l.table + ` (run_id, seq, attempt, event, data, final, created_at) VALUES `)
		args := make([]any, 0, len(part)*per)
		for i, ev := range part {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?, ?, ?, ?, ?)")
			final := 0
			if ev.Final {
				final = 1
			}
			args = append(args, runID, next, attempt, ev.Event, string(ev.Data), final, now)
			next++
		}
		if _, err := tx.ExecContext(ctx, l.q(b.String()), args...); err != nil {
			return -1, err
		}
	}
	return first, tx.Commit()
}

// chunkEnd is where the INSERT of evs from start ends: after at most 100
// events and, where the database bounds a packet (MySQL), before their
// JSON passes the bound. The driver sends a value in the statement's own
// packet up to a share of the packet size it assumes (64 MiB by default),
// not the server's: events each within the server's bound could make one
// packet beyond it together, refused every time it was written again.
func (l *Log) chunkEnd(runID string, evs []Pending, start int) int {
	// perRow: a row's other values and their encoding besides its data,
	// event and run id.
	const chunk, perRow = 100, 64
	limit, size := l.maxData(), 0
	end := start
	for end < len(evs) && end-start < chunk {
		size += len(evs[end].Data) + len(evs[end].Event) + len(runID) + perRow
		if limit > 0 && end > start && size > limit {
			break
		}
		end++
	}
	return end
}

// ErrBadLimit: a read of fewer than one event.
var ErrBadLimit = errors.New("runlog: a read needs a limit of at least 1")

// Read returns up to limit events of the run with seq > after (-1: from
// the first), in order. after below -1 is ErrBadIndex, a limit below 1
// ErrBadLimit (SQLite would take -1 for no limit).
func (l *Log) Read(ctx context.Context, runID string, after int64, limit int) (_ []Record, err error) {
	switch {
	case after < -1:
		return nil, fmt.Errorf("%w: %d (-1 reads from the first event)", ErrBadIndex, after)
	case limit < 1:
		return nil, fmt.Errorf("%w (got %d)", ErrBadLimit, limit)
	}
	ctx, cancel := l.bound(ctx)
	defer cancel()
	defer func() { err = l.unavailable(ctx, err) }()
	rows, err := l.r.QueryContext(ctx, l.q(`SELECT seq, attempt, event, data, final FROM `+l.table+` WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`), runID, after, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var r Record
		var data string
		var final int
		if err := rows.Scan(&r.Seq, &r.Attempt, &r.Event, &data, &final); err != nil {
			return nil, err
		}
		r.Data, r.Final = []byte(data), final != 0
		out = append(out, r)
	}
	return out, rows.Err()
}

// holds reports whether the run's log holds evs, written by attempt, from
// seq start: whether a write whose commit failed was stored all the same.
// A commit stores all of its events or none, and a seq holds one event.
func (l *Log) holds(ctx context.Context, runID string, attempt int, start int64, evs []Pending) (bool, error) {
	recs, err := l.Read(ctx, runID, start-1, len(evs))
	if err != nil || len(recs) != len(evs) {
		return false, err
	}
	for i, r := range recs {
		if r.Seq != start+int64(i) || r.Attempt != attempt || r.Event != evs[i].Event || r.Final != evs[i].Final || !bytes.Equal(r.Data, evs[i].Data) {
			return false, nil
		}
	}
	return true, nil
}

// Last returns the run's last stored event (its Seq + 1 is how many the
// run has: numbering is gapless); ok is false when it has none.
func (l *Log) Last(ctx context.Context, runID string) (rec Record, ok bool, err error) {
	ctx, cancel := l.bound(ctx)
	defer cancel()
	defer func() { err = l.unavailable(ctx, err) }()
	var data string
	var final int
	err = l.r.QueryRowContext(ctx, l.q(`SELECT seq, attempt, event, data, final FROM `+l.table+` WHERE run_id = ? ORDER BY seq DESC LIMIT 1`), runID).
		Scan(&rec.Seq, &rec.Attempt, &rec.Event, &data, &final)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Record{}, false, nil
	case err != nil:
		return Record{}, false, err
	}
	rec.Data, rec.Final = []byte(data), final != 0
	return rec, true, nil
}

// Count returns how many events the run has stored.
func (l *Log) Count(ctx context.Context, runID string) (int64, error) {
	ctx, cancel := l.bound(ctx)
	defer cancel()
	var n int64
	err := l.r.QueryRowContext(ctx, l.q(`SELECT COUNT(*) FROM `+l.table+` WHERE run_id = ?`), runID).Scan(&n)
	return n, l.unavailable(ctx, err)
}

// DeleteBefore deletes the events of runs whose log ended (its last event
// is a final one) before cutoff (unix seconds), and of runs with no event
// since staleCutoff (a run cut by a crash that nothing finished). Both key
// on the run's last event: a run paused long ago whose log went on (a
// later attempt, a continuation) keeps it. It returns how many rows it
// deleted.
//
// It reads only the events older than cutoff (through the created_at
// index) and each candidate run's own events (through the primary key),
// never the whole table, and deletes at most retentionBatch runs per
// statement.
//
// A run whose job the durable queue will still run (queued: a retry
// waiting; running) keeps its log whatever its age: the next attempt's
// events are numbered after the last stored one, and a deleted log would
// make them reuse the indexes clients hold from the earlier attempt.
func (l *Log) DeleteBefore(ctx context.Context, cutoff, staleCutoff int64) (int64, error) {
	jobs, err := l.hasJobs(ctx)
	if err != nil {
		return 0, err
	}
	stmt := l.q(l.expiredSQL(jobs))
	var total int64
	for {
		n, err := l.deleteBatch(ctx, stmt, cutoff, staleCutoff)
		if err != nil {
			return total, err
		}
		total += n
		if n == 0 {
			return total, nil
		}
	}
}

// deleteBatch runs one retention statement within the query timeout.
func (l *Log) deleteBatch(ctx context.Context, stmt string, cutoff, staleCutoff int64) (int64, error) {
	ctx, cancel := l.bound(ctx)
	defer cancel()
	res, err := l.w.ExecContext(ctx, stmt, cutoff, cutoff, staleCutoff, retentionBatch)
	if err != nil {
		return 0, l.unavailable(ctx, err)
	}
	return res.RowsAffected()
}

// hasJobs reports whether the store's jobs table exists (the durable
// queue created it; it does not run on MySQL). Once seen it is remembered.
func (l *Log) hasJobs(ctx context.Context) (_ bool, err error) {
	if l.jobs == "" || l.dialect == "mysql" {
		return false, nil
	}
	if l.jobsSeen.Load() {
		return true, nil
	}
	ctx, cancel := l.bound(ctx)
	defer cancel()
	defer func() { err = l.unavailable(ctx, err) }()
	probe, arg := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, sqlstore.JobsTable
	if l.dialect == "postgres" {
		probe, arg = `SELECT COUNT(*) FROM (SELECT to_regclass(?) AS t) r WHERE r.t IS NOT NULL`, l.jobs
	}
	var n int
	if err := l.r.QueryRowContext(ctx, l.q(probe), arg).Scan(&n); err != nil {
		return false, err
	}
	l.jobsSeen.Store(n > 0)
	return n > 0, nil
}

// retentionBatch bounds the runs one retention statement deletes.
const retentionBatch = 500

// expiredSQL deletes up to a batch of expired runs' events. Its arguments:
// cutoff, cutoff, staleCutoff, the batch size. The candidates are the runs
// with an event older than cutoff (the index range that bounds the scan);
// one expires when its last event (found by the primary key) is older than
// cutoff and final, or older than staleCutoff. MySQL cannot select from the table it deletes
// from: the derived table (not mergeable, for its LIMIT) is materialised
// first. With jobs, a run whose job is queued or running (queue.StatusQueued,
// queue.StatusRunning) does not expire.
func (l *Log) expiredSQL(jobs bool) string {
	t := l.table
	// Without statistics (SQLite's ANALYZE is not run, MySQL's may be
	// stale) a planner may read the whole primary key for the DISTINCT
	// rather than the created_at range: the index is named.
	aged := t // Postgres: its statistics choose
	switch l.dialect {
	case "sqlite":
		aged = t + ` INDEXED BY ` + createdAtIndex
	case "mysql":
		aged = t + ` FORCE INDEX (` + createdAtIndex + `)`
	}
	// MariaDB plans a DELETE … WHERE run_id IN (subquery) as a scan of
	// the whole table, each row checked against the subquery: there the
	// expired runs are joined instead.
	live := ""
	if jobs {
		live = `
	AND NOT EXISTS (SELECT 1 FROM ` + l.jobs + ` j WHERE j.id = c.run_id AND j.status IN ('queued', 'running'))`
	}
	head, tail := `DELETE FROM `+t+` WHERE run_id IN (SELECT run_id FROM (`, `) AS done)`
	if l.dialect == "mysql" {
		head, tail = `DELETE t FROM `+t+` t JOIN (`, `) AS done ON t.run_id = done.run_id`
	}
	return head + `
	SELECT c.run_id FROM (SELECT DISTINCT run_id FROM ` + aged + ` WHERE created_at < ?) c
	JOIN ` + t + ` e ON e.run_id = c.run_id AND e.seq = (SELECT MAX(m.seq) FROM ` + t + ` m WHERE m.run_id = c.run_id)
	WHERE e.created_at < ? AND (e.final = 1 OR e.created_at < ?)` + live + `
	LIMIT ?` + tail
}

// wake tells this process's subscribers of the run that events were added.
func (l *Log) wake(runID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.wakes[runID]; w != nil {
		close(w.ch)
		w.ch = make(chan struct{})
	}
}

// follow registers a subscriber of the run; stop ends it.
func (l *Log) follow(runID string) (stop func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.wakes[runID]
	if w == nil {
		w = &watch{ch: make(chan struct{})}
		l.wakes[runID] = w
	}
	w.subs++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if w.subs--; w.subs == 0 {
			delete(l.wakes, runID)
		}
	}
}

// woken returns a channel closed at the run's next append in this process
// (the run must be followed).
func (l *Log) woken(runID string) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.wakes[runID]; w != nil {
		return w.ch
	}
	return nil
}
