package sqltools

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgEngine speaks pgx natively: pgx's Query always uses the extended
// protocol, which refuses several statements in one call, while database/sql's
// Exec without arguments would fall back to the simple protocol.
type pgEngine struct {
	pool    *pgxpool.Pool
	schema  string
	timeout time.Duration
}

func openPostgres(dsn, schema string, timeout time.Duration) (*pgEngine, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqltools: postgres dsn: %w", err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("sqltools: postgres: %w", err)
	}
	return &pgEngine{pool: pool, schema: schema, timeout: timeout}, nil
}

func (e *pgEngine) close() error { e.pool.Close(); return nil }

func (e *pgEngine) listTables(ctx context.Context) ([]string, error) {
	rows, err := e.pool.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`, e.schema)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if names == nil {
		names = []string{}
	}
	return names, err
}

func (e *pgEngine) describeTable(ctx context.Context, table string) ([]Column, error) {
	rows, err := e.pool.Query(ctx, `
		SELECT c.column_name, c.data_type, c.is_nullable = 'YES', c.column_default,
		       EXISTS (SELECT 1 FROM information_schema.table_constraints tc
		               JOIN information_schema.key_column_usage k
		                 ON k.constraint_name = tc.constraint_name AND k.table_schema = tc.table_schema AND k.table_name = tc.table_name
		               WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = c.table_schema
		                 AND tc.table_name = c.table_name AND k.column_name = c.column_name)
		FROM information_schema.columns c
		WHERE c.table_schema = $1 AND c.table_name = $2
		ORDER BY c.ordinal_position`, e.schema, table)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Column, error) {
		var c Column
		err := r.Scan(&c.Name, &c.Type, &c.Nullable, &c.Default, &c.Key)
		return c, err
	})
}

func (e *pgEngine) run(ctx context.Context, st statement, query string, out *resultWriter) error {
	conn, err := e.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The session ends with the call: what the query leaves in it (a
	// session-level advisory lock, a setting a committed write changed, an
	// extension's state such as a dblink connection) survives a rollback,
	// and on a pooled connection would outlive the call.
	defer endSession(conn)
	return e.runOn(ctx, conn.Conn(), st, query, out)
}

// endSession takes conn out of the pool and closes it; the server then
// releases what the session held.
func endSession(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = conn.Hijack().Close(ctx)
}

func (e *pgEngine) runOn(ctx context.Context, conn *pgx.Conn, st statement, query string, out *resultWriter) error {
	mode := pgx.ReadOnly
	if st.write {
		mode = pgx.ReadWrite
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{AccessMode: mode})
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	// The gate reads '...' without backslash escapes; a role's or
	// database's default (or the dsn) may say otherwise. Pinned first, in a
	// statement without literals or parameters, so that the next ones (and
	// pgx's own quoting under the simple protocol) are read as the gate reads.
	if _, err := tx.Exec(ctx, "SET LOCAL standard_conforming_strings = on"); err != nil {
		return err
	}
	// Pin name resolution: a role's or database's default search_path must
	// not redirect an allowed table name. Bound the query on the server: a
	// client that gives up does not stop a backend waiting for a lock. The
	// timer is armed as the query starts; a set_config inside the query
	// cannot disarm it, and SET is refused by the gate.
	bound := fmt.Sprintf("%dms", serverBound(ctx, e.timeout).Milliseconds())
	if _, err := tx.Exec(ctx, "SELECT set_config('search_path', $1, true), set_config('statement_timeout', $2, true), set_config('lock_timeout', $2, true)",
		pgx.Identifier{e.schema}.Sanitize(), bound); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, query)
	if err != nil {
		return err
	}
	out.Columns = nil
	for _, f := range rows.FieldDescriptions() {
		out.Columns = append(out.Columns, f.Name)
	}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			rows.Close()
			return err
		}
		if !out.add(vals) {
			break
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if !st.write {
		return nil
	}
	if !st.returning {
		out.Columns = nil
		out.affected(rows.CommandTag().RowsAffected())
	}
	return tx.Commit(ctx)
}

// stoppedAtBound reports the server cancelling the statement, as
// statement_timeout does (SQLSTATE 57014, query_canceled).
func (e *pgEngine) stoppedAtBound(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "57014"
}

// privileges: a superuser, or membership in the roles that reach the
// server's files and programs through functions no read-only transaction
// stops (pg_has_role is true of every role for a superuser).
func (e *pgEngine) privileges(ctx context.Context) (string, []string, error) {
	var user string
	var super bool
	var roles []string
	err := e.pool.QueryRow(ctx, `
		SELECT current_user::text, r.rolsuper,
		       ARRAY(SELECT b.rolname::text FROM pg_roles b
		             WHERE b.rolname IN ('pg_read_server_files', 'pg_write_server_files', 'pg_execute_server_program')
		               AND pg_has_role(current_user, b.oid, 'MEMBER') ORDER BY b.rolname)
		FROM pg_roles r WHERE r.rolname = current_user`).Scan(&user, &super, &roles)
	if err != nil {
		return "", nil, err
	}
	if super {
		return user, []string{"SUPERUSER"}, nil
	}
	return user, roles, nil
}
