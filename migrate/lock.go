package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"time"
)

// lock serialises migrations of one database across processes: a session
// advisory lock on Postgres, GET_LOCK on MySQL, an flock on a file next to the
// SQLite database. All three are released by the server or the kernel when the
// holder dies, so a killed migration never leaves a stale lock.
func (m *Manager) lock(ctx context.Context) (release func(), err error) {
	switch m.cfg.Dialect {
	case Postgres:
		return m.lockPostgres(ctx)
	case MySQL:
		return m.lockMySQL(ctx)
	}
	return m.lockSQLite(ctx)
}

func (m *Manager) lockName() string {
	return "agentry_migrate:" + m.cfg.Schema + "." + m.tables.Sessions
}

func (m *Manager) lockPostgres(ctx context.Context) (func(), error) {
	h := fnv.New64a()
	h.Write([]byte(m.lockName()))
	key := int64(h.Sum64())
	conn, err := m.cfg.DB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: connect for lock: %w", err)
	}
	deadline := time.Now().Add(m.cfg.LockTimeout)
	for {
		var ok bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok); err != nil {
			conn.Close()
			return nil, fmt.Errorf("migrate: take advisory lock: %w", err)
		}
		if ok {
			return func() {
				_, _ = conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", key)
				conn.Close()
			}, nil
		}
		if err := waitRetry(ctx, deadline); err != nil {
			conn.Close()
			return nil, err
		}
	}
}

func (m *Manager) lockMySQL(ctx context.Context) (func(), error) {
	conn, err := m.cfg.DB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: connect for lock: %w", err)
	}
	var dbName sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&dbName); err != nil {
		conn.Close()
		return nil, err
	}
	name := "agentry_migrate:" + dbName.String
	if len(name) > 64 {
		h := fnv.New64a()
		h.Write([]byte(name))
		name = fmt.Sprintf("agentry_migrate:%x", h.Sum64())
	}
	secs := int(m.cfg.LockTimeout / time.Second)
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", name, max(secs, 1)).Scan(&got); err != nil {
		conn.Close()
		return nil, fmt.Errorf("migrate: take lock: %w", err)
	}
	if got.Int64 != 1 {
		conn.Close()
		return nil, ErrLocked
	}
	return func() {
		_, _ = conn.ExecContext(context.Background(), "SELECT RELEASE_LOCK(?)", name)
		conn.Close()
	}, nil
}

func (m *Manager) lockSQLite(ctx context.Context) (func(), error) {
	var seq int
	var name, file string
	rows, err := m.cfg.DB.QueryContext(ctx, "PRAGMA database_list")
	if err != nil {
		return nil, fmt.Errorf("migrate: find database file: %w", err)
	}
	for rows.Next() {
		var n, f string
		if err := rows.Scan(&seq, &n, &f); err != nil {
			rows.Close()
			return nil, err
		}
		if n == "main" {
			name, file = n, f
		}
	}
	rows.Close()
	if name == "" || file == "" {
		return func() {}, nil // in-memory database: no other process can see it
	}
	deadline := time.Now().Add(m.cfg.LockTimeout)
	for {
		release, ok, err := flockFile(file + ".migrate-lock")
		if err != nil {
			return nil, fmt.Errorf("migrate: lock %s: %w", file, err)
		}
		if ok {
			return release, nil
		}
		if err := waitRetry(ctx, deadline); err != nil {
			return nil, err
		}
	}
}

func waitRetry(ctx context.Context, deadline time.Time) error {
	if time.Now().After(deadline) {
		return ErrLocked
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(100 * time.Millisecond):
		return nil
	}
}
