package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"reflect"
	"sync/atomic"

	sqlite3 "modernc.org/sqlite"
)

// stmtCacheSize is how many prepared statements a connection keeps. The
// store's, the durable queue's and River's hot statements are a few dozen;
// statements built with a varying number of placeholders beyond that evict
// the least recently used.
const stmtCacheSize = 128

// open is sql.Open("sqlite", dsn) whose connections keep their prepared
// statements: modernc.org/sqlite prepares (parses and compiles) every
// statement on every Exec and Query, which was ~30 % of a durable background
// run's CPU (docs/benchmarks.md, "Issue 9: throughput (i9-tput)"). Every
// statement executed through database/sql on these connections, including
// other libraries' (River's), is prepared once per connection.
func open(dsn string) (*sql.DB, error) {
	c, err := sqlite3.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(cachingConnector{c}), nil
}

type cachingConnector struct{ driver.Connector }

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	inner, ok := dc.(innerConn)
	if !ok {
		dc.Close()
		return nil, errors.New("sqlite: the driver's connection lacks context methods")
	}
	return &cachingConn{innerConn: inner, stmts: map[string]*cachedStmt{}}, nil
}

// innerConn is what modernc.org/sqlite's connection implements and
// database/sql uses.
type innerConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachingConn keeps each statement text's prepared statement. database/sql
// uses a connection from one goroutine at a time, so the cache needs no lock;
// a statement whose rows are still open is busy, and the same text run again
// meanwhile (a nested query) is prepared afresh and not cached.
type cachingConn struct {
	innerConn
	stmts map[string]*cachedStmt
	tick  uint64 // use counter for least-recently-used eviction
}

type cachedStmt struct {
	st   stmtContext
	busy bool
	used uint64
}

type stmtContext interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// stmtCacheHits counts statements served from a cache (tests); statements
// counts every Exec and Query on the store's connections.
var stmtCacheHits, statements atomic.Int64

// Statements is how many statements (Exec and Query calls, transactions'
// BEGIN and COMMIT not included) this process has run on the connections of
// the SQLite stores it opened: a load-independent measure for benchmarks.
func Statements() int64 { return statements.Load() }

// get returns text's cached statement, preparing and caching it when
// missing; nil (the caller runs text uncached) when it is busy or cannot be
// prepared here.
func (c *cachingConn) get(ctx context.Context, text string) *cachedStmt {
	statements.Add(1)
	c.tick++
	if s := c.stmts[text]; s != nil {
		if s.busy {
			return nil
		}
		s.used = c.tick
		stmtCacheHits.Add(1)
		return s
	}
	ds, err := c.innerConn.PrepareContext(ctx, text)
	if err != nil {
		return nil // the uncached call reports the error
	}
	st, ok := ds.(stmtContext)
	if !ok {
		ds.Close()
		return nil
	}
	if len(c.stmts) >= stmtCacheSize {
		c.evict()
	}
	s := &cachedStmt{st: st, used: c.tick}
	c.stmts[text] = s
	return s
}

// evict finalizes the least recently used statement that is not busy.
func (c *cachingConn) evict() {
	var oldest string
	var at uint64
	for text, s := range c.stmts {
		if !s.busy && (oldest == "" || s.used < at) {
			oldest, at = text, s.used
		}
	}
	if oldest != "" {
		c.stmts[oldest].st.Close()
		delete(c.stmts, oldest)
	}
}

func (c *cachingConn) ExecContext(ctx context.Context, text string, args []driver.NamedValue) (driver.Result, error) {
	s := c.get(ctx, text)
	if s == nil {
		return c.innerConn.ExecContext(ctx, text, args)
	}
	return s.st.ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, text string, args []driver.NamedValue) (driver.Rows, error) {
	s := c.get(ctx, text)
	if s == nil {
		return c.innerConn.QueryContext(ctx, text, args)
	}
	r, err := s.st.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	s.busy = true
	return &cachedRows{Rows: r, s: s}, nil
}

// Close finalizes the cached statements, then closes the connection.
func (c *cachingConn) Close() error {
	for text, s := range c.stmts {
		s.st.Close()
		delete(c.stmts, text)
	}
	return c.innerConn.Close()
}

// cachedRows frees its statement for reuse when closed; the statement is
// reset (not finalized) by the driver's Close.
type cachedRows struct {
	driver.Rows
	s *cachedStmt
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	r.s.busy = false
	return err
}

// The column type methods database/sql looks for on driver.Rows.

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypeNullable(i int) (bool, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}
