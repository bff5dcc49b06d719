package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

// pipeline runs stmts in one transaction with pgx's batch: BEGIN and the
// statements go out in one round trip (the statements run one after the
// other, each READ COMMITTED statement with a snapshot taken when it starts,
// so a statement after the advisory lock sees what committed before the lock
// was granted), then COMMIT or ROLLBACK in a second.
func pipeline(ctx context.Context, pool *sql.DB, stmts []sqlstore.PipelineStmt) error {
	return onPgx(ctx, pool, "pipeline", func(c *pgx.Conn) error {
		err := sendStmts(ctx, c, true, stmts)
		end := "COMMIT"
		if err != nil {
			end = "ROLLBACK"
		}
		if _, eerr := c.Exec(ctx, end); err == nil && eerr != nil {
			err = eerr
		}
		return notMidTx(ctx, c, err)
	})
}

// batch runs stmts in one round trip as one implicit transaction: pgx sends
// them with a single Sync and no BEGIN, so the server commits after the
// last one succeeds, or rolls back at the first error and skips the rest,
// before any result is read. Each READ COMMITTED statement still takes its
// own snapshot, so a statement after the advisory lock sees what committed
// before the lock was granted.
func batch(ctx context.Context, pool *sql.DB, stmts []sqlstore.PipelineStmt) error {
	return onPgx(ctx, pool, "batch", func(c *pgx.Conn) error {
		return notMidTx(ctx, c, sendStmts(ctx, c, false, stmts))
	})
}

// queryRows runs q (bound for Postgres) through pgx on a connection of pool
// and hands its rows to read: pgx watches ctx with context.AfterFunc, where
// database/sql's rows start a goroutine per query (sqlstore.Dialect.QueryRows).
// Scan passes sql.Scanner destinations the values database/sql would.
func queryRows(ctx context.Context, pool *sql.DB, q string, args []any, read func(sqlstore.Rows) error) error {
	return onPgx(ctx, pool, "query", func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		return read(pgxRows{rows})
	})
}

// pgxRows is pgx's rows as sqlstore.Rows.
type pgxRows struct{ pgx.Rows }

func (r pgxRows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}

// onPgx runs fn on a pgx connection of pool (what names the caller in the
// error when the pool is not pgx's).
func onPgx(ctx context.Context, pool *sql.DB, what string, fn func(c *pgx.Conn) error) error {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("postgres: %s needs a pgx connection, got %T", what, dc)
		}
		return fn(sc.Conn())
	})
}

// sendStmts sends stmts (after BEGIN when begin is set) in one pgx batch
// and reads their results in order, each Row through its callback; it
// stops at the first error.
func sendStmts(ctx context.Context, c *pgx.Conn, begin bool, stmts []sqlstore.PipelineStmt) error {
	b := &pgx.Batch{}
	if begin {
		b.Queue("BEGIN")
	}
	for _, s := range stmts {
		b.Queue(sqlstore.RebindDollar(s.Query), s.Args...)
	}
	br := c.SendBatch(ctx, b)
	var err error
	if begin {
		_, err = br.Exec()
	}
	for _, s := range stmts {
		if err != nil {
			break
		}
		if s.Row != nil {
			err = s.Row(row{br.QueryRow()})
		} else {
			_, err = br.Exec()
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// notMidTx returns err, first closing c when err left it inside a
// transaction (a cancelled ctx cut the batch or its end): such a
// connection must not go back to the pool.
func notMidTx(ctx context.Context, c *pgx.Conn, err error) error {
	if err != nil && !c.IsClosed() && c.PgConn().TxStatus() != 'I' {
		c.Close(context.WithoutCancel(ctx))
		return errors.Join(err, sql.ErrConnDone)
	}
	return err
}

// row maps pgx's no-row error to database/sql's.
type row struct{ r pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.r.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sql.ErrNoRows
	}
	return err
}
