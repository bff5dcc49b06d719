package migrate_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/migrate/migratetest"
)

// rowCounter wraps a fixture's real driver and counts, for the queries
// whose text contains match, the rows the application read and the rows it
// left unread when it closed the result early: the wrapper reads those on
// Close (as the Postgres and MySQL drivers do, off the wire) and counts them.
type rowCounter struct {
	match string
	mu    sync.Mutex
	// queries, read and discarded are totals over the matching queries;
	// maxRead is the most rows one of them returned to the application.
	queries, read, discarded, maxRead int
}

// take returns the totals and starts counting again.
func (c *rowCounter) take() (queries, read, discarded, maxRead int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	queries, read, discarded, maxRead = c.queries, c.read, c.discarded, c.maxRead
	c.queries, c.read, c.discarded, c.maxRead = 0, 0, 0, 0
	return
}

// countingDB opens the fixture's database again through a rowCounter.
func (f *fixtureDB) countingDB(t testing.TB, match string) (*sql.DB, *rowCounter) {
	t.Helper()
	dsn := f.dsn
	if f.dialect == sqliteName {
		dsn = migratetest.SQLiteDSN(f.path)
	}
	c := &rowCounter{match: match}
	d := sql.OpenDB(&countConnector{drv: f.db.Driver(), dsn: dsn, c: c})
	t.Cleanup(func() { d.Close() })
	return d, c
}

type countConnector struct {
	drv driver.Driver
	dsn string
	c   *rowCounter
}

func (cc *countConnector) Connect(ctx context.Context) (driver.Conn, error) {
	var conn driver.Conn
	var err error
	if dc, ok := cc.drv.(driver.DriverContext); ok {
		var ctr driver.Connector
		if ctr, err = dc.OpenConnector(cc.dsn); err != nil {
			return nil, err
		}
		conn, err = ctr.Connect(ctx)
	} else {
		conn, err = cc.drv.Open(cc.dsn)
	}
	if err != nil {
		return nil, err
	}
	return &countConn{Conn: conn, c: cc.c}, nil
}

func (cc *countConnector) Driver() driver.Driver { return cc.drv }

// countConn forwards every optional interface the drivers implement and
// database/sql uses here; queries go through QueryContext.
type countConn struct {
	driver.Conn
	c *rowCounter
}

func (cn *countConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := cn.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	rows, err := q.QueryContext(ctx, query, args)
	if err != nil || !strings.Contains(query, cn.c.match) {
		return rows, err
	}
	cn.c.mu.Lock()
	cn.c.queries++
	cn.c.mu.Unlock()
	return &countRows{Rows: rows, c: cn.c}, nil
}

func (cn *countConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if e, ok := cn.Conn.(driver.ExecerContext); ok {
		return e.ExecContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

// PrepareContext wraps the statements database/sql prepares when the
// driver skips QueryContext (MySQL without interpolateParams, for queries
// with arguments).
func (cn *countConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	var st driver.Stmt
	var err error
	if p, ok := cn.Conn.(driver.ConnPrepareContext); ok {
		st, err = p.PrepareContext(ctx, query)
	} else {
		st, err = cn.Prepare(query)
	}
	if err != nil || !strings.Contains(query, cn.c.match) {
		return st, err
	}
	return &countStmt{Stmt: st, c: cn.c}, nil
}

type countStmt struct {
	driver.Stmt
	c *rowCounter
}

func (s *countStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := s.Stmt.(driver.StmtQueryContext)
	if !ok {
		return nil, errors.New("countStmt: the driver's statement has no QueryContext")
	}
	rows, err := q.QueryContext(ctx, args)
	if err != nil {
		return nil, err
	}
	s.c.mu.Lock()
	s.c.queries++
	s.c.mu.Unlock()
	return &countRows{Rows: rows, c: s.c}, nil
}

func (s *countStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if e, ok := s.Stmt.(driver.StmtExecContext); ok {
		return e.ExecContext(ctx, args)
	}
	return nil, errors.New("countStmt: the driver's statement has no ExecContext")
}

func (s *countStmt) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := s.Stmt.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (cn *countConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if b, ok := cn.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	return cn.Begin() //nolint:staticcheck // the fallback database/sql uses too
}

func (cn *countConn) Ping(ctx context.Context) error {
	if p, ok := cn.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (cn *countConn) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := cn.Conn.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

func (cn *countConn) ResetSession(ctx context.Context) error {
	if r, ok := cn.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (cn *countConn) IsValid() bool {
	if v, ok := cn.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

type countRows struct {
	driver.Rows
	c   *rowCounter
	eof bool
	n   int
}

func (r *countRows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	if err == nil {
		r.n++
	} else {
		r.eof = true
	}
	return err
}

func (r *countRows) Close() error {
	discarded := 0
	if !r.eof {
		dest := make([]driver.Value, len(r.Columns()))
		for {
			err := r.Rows.Next(dest)
			if errors.Is(err, io.EOF) || err != nil {
				break
			}
			discarded++
		}
	}
	r.c.mu.Lock()
	r.c.read += r.n
	r.c.discarded += discarded
	r.c.maxRead = max(r.c.maxRead, r.n)
	r.c.mu.Unlock()
	return r.Rows.Close()
}
