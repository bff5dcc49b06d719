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
	// fx collects the run writes' effects for the history cache, in a
	// group commit of a store that has one; nil otherwise.
	fx *groupEffects
}

func (c txConn) stmt(ctx context.Context, q string) *sql.Stmt {
	var st *sql.Stmt
	if c.s.d.SingleWriter {
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
	if !s.d.SingleWriter {
		return
	}
	for _, q := range qs {
		s.prepared(ctx, s.w, s.d.Bind(q))
	}
}

func (c txConn) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	q = c.s.d.Bind(q)
	if st := c.stmt(ctx, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return c.tx.ExecContext(ctx, q, args...)
}

func (c txConn) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	q = c.s.d.Bind(q)
	if st := c.stmt(ctx, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.tx.QueryRowContext(ctx, q, args...)
}

func (c txConn) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	q = c.s.d.Bind(q)
	if st := c.stmt(ctx, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return c.tx.QueryContext(ctx, q, args...)
}

// returning runs an INSERT … RETURNING on c; its Scan reads the one row and
// then the result to its end. sql.Row would close the result after the first
// row, and on SQLite that resets the statement before it steps to
// SQLITE_DONE: the write still commits, but SQLite runs its WAL hook, the
// automatic checkpoint, only on SQLITE_DONE, so a server writing through
// RETURNING never checkpointed and its -wal file grew without bound.
func returning(ctx context.Context, c writeConn, q string, args ...any) returningRow {
	rows, err := c.query(ctx, q, args...)
	return returningRow{rows: rows, err: err}
}

// returningRow is the result of returning; it implements scanner.
type returningRow struct {
	rows *sql.Rows
	err  error
}

// Scan scans the first row into dest (sql.ErrNoRows when there is none) and
// reads the rest of the result.
func (r returningRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if !r.rows.Next() {
		err := r.rows.Err()
		if cerr := r.rows.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = sql.ErrNoRows
		}
		return err
	}
	err := r.rows.Scan(dest...)
	for r.rows.Next() { // step to the end: SQLITE_DONE runs the WAL hook
	}
	if err == nil {
		err = r.rows.Err()
	}
	if cerr := r.rows.Close(); err == nil {
		err = cerr
	}
	return err
}
