package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// maxCachedStmts bounds the statement cache; queries built from filters have
// many variants and only the hot, fixed-text ones should stay prepared.
const maxCachedStmts = 128

// stmtCache keeps prepared statements per pool and query text. SQLite
// (modernc) re-parses every unprepared query, which cost a quarter of the CPU
// of a persisted conversation; go-sql-driver/mysql turns each query with
// arguments into prepare, execute and close round trips. pgx already caches
// statements per connection, so Postgres bypasses this cache.
type stmtCache struct {
	mu     sync.Mutex
	m      map[stmtKey]*sql.Stmt
	closed bool
}

type stmtKey struct {
	pool  *sql.DB
	query string
}

// prepared returns a cached *sql.Stmt for q on pool (q already rebound), or
// nil when the dialect does not benefit or the cache is full; callers then run
// q directly. database/sql prepares the statement lazily on each connection of
// the pool and re-prepares it after a reconnect.
func (s *Store) prepared(ctx context.Context, pool *sql.DB, q string) *sql.Stmt {
	if !s.d.CacheStatements {
		return nil
	}
	c := &s.stmts
	k := stmtKey{pool, q}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[k]; ok || c.closed {
		return st
	}
	if len(c.m) >= maxCachedStmts {
		return nil
	}
	st, err := pool.PrepareContext(ctx, q)
	if err != nil {
		return nil // the direct call reports the error
	}
	if c.m == nil {
		c.m = make(map[stmtKey]*sql.Stmt)
	}
	c.m[k] = st
	return st
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for k, st := range c.m {
		errs = append(errs, st.Close())
		delete(c.m, k)
	}
	return errors.Join(errs...)
}

// exec runs a fixed-text write statement on the writer, prepared once.
func (s *Store) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	q = s.d.Bind(q)
	if st := s.prepared(ctx, s.w, q); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return s.w.ExecContext(ctx, q, args...)
}

// queryRow runs a fixed-text single-row query on pool, prepared once.
func (s *Store) queryRow(ctx context.Context, pool *sql.DB, q string, args ...any) *sql.Row {
	q = s.d.Bind(q)
	if st := s.prepared(ctx, pool, q); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return pool.QueryRowContext(ctx, q, args...)
}

// query runs a fixed-text query on pool, prepared once.
func (s *Store) query(ctx context.Context, pool *sql.DB, q string, args ...any) (*sql.Rows, error) {
	return s.queryBound(ctx, pool, s.d.Bind(q), args...)
}

// readRows runs q (bound for the dialect) on pool and hands its rows to
// read, which closes them: the driver's own rows when the dialect has them
// (Dialect.QueryRows), else database/sql's, prepared once.
func (s *Store) readRows(ctx context.Context, pool *sql.DB, q string, args []any, read func(Rows) error) error {
	if s.d.QueryRows != nil {
		return s.d.QueryRows(ctx, pool, q, args, read)
	}
	rows, err := s.queryBound(ctx, pool, q, args...)
	if err != nil {
		return err
	}
	return read(rows)
}

// queryBound is query with q already bound for the dialect.
func (s *Store) queryBound(ctx context.Context, pool *sql.DB, q string, args ...any) (*sql.Rows, error) {
	if st := s.prepared(ctx, pool, q); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return pool.QueryContext(ctx, q, args...)
}
