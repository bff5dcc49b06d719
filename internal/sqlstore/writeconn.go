package sqlstore

import (
	"context"
	"database/sql"
)

// writeConn runs fixed-text write-path statements either as autocommit
// statements on the writer pool or inside one transaction on it, prepared
// once either way. Queries are given unbound (with ?).
type writeConn interface {
	exec(ctx context.Context, q string, args ...any) (sql.Result, error)
	queryRow(ctx context.Context, q string, args ...any) *sql.Row
	query(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

// poolConn is the writer pool: each statement commits on its own.
type poolConn struct{ s *Store }

func (c poolConn) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return c.s.exec(ctx, q, args...)
}

func (c poolConn) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	return c.s.queryRow(ctx, c.s.w, q, args...)
}

func (c poolConn) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return c.s.query(ctx, c.s.w, q, args...)
}

// txConn is a transaction on the writer. A statement from the cache is bound
// to the transaction's connection, where it is usually prepared already
// (SQLite's writer is a single connection).
type txConn struct {
	s  *Store
	tx *sql.Tx
}

func (c txConn) stmt(ctx context.Context, q string) *sql.Stmt {
	var st *sql.Stmt
	if c.s.d.Name == SQLite {
		// The writer's one connection is this transaction's: preparing on
		// the pool would wait for it forever. Callers warm the cache first.
		st = c.s.cachedStmt(c.s.w, q)
	} else {
		st = c.s.prepared(ctx, c.s.w, q)
	}
	if st == nil {
		return nil
	}
	return c.tx.StmtContext(ctx, st)
}

// cachedStmt returns the cached statement for q on pool, or nil.
func (s *Store) cachedStmt(pool *sql.DB, q string) *sql.Stmt {
	s.stmts.mu.Lock()
	defer s.stmts.mu.Unlock()
	return s.stmts.m[stmtKey{pool, q}]
}

// warmWriter prepares write statements on the writer before a transaction
// takes SQLite's only writer connection (see txConn.stmt).
func (s *Store) warmWriter(ctx context.Context, qs ...string) {
	if s.d.Name != SQLite {
		return
	}
	for _, q := range qs {
		s.prepared(ctx, s.w, s.d.Rebind(q))
	}
}

func (c txConn) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	q = c.s.d.Rebind(q)
	if st := c.stmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return c.tx.ExecContext(ctx, q, args...)
}

func (c txConn) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	q = c.s.d.Rebind(q)
	if st := c.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.tx.QueryRowContext(ctx, q, args...)
}

func (c txConn) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	q = c.s.d.Rebind(q)
	if st := c.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return c.tx.QueryContext(ctx, q, args...)
}
