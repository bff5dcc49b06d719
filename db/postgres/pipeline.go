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
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("postgres: pipeline needs a pgx connection, got %T", dc)
		}
		c := sc.Conn()
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		for _, s := range stmts {
			b.Queue(sqlstore.RebindDollar(s.Query), s.Args...)
		}
		br := c.SendBatch(ctx, b)
		_, err := br.Exec()
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
		end := "COMMIT"
		if err != nil {
			end = "ROLLBACK"
		}
		if _, eerr := c.Exec(ctx, end); err == nil && eerr != nil {
			err = eerr
		}
		if err != nil && c.PgConn().TxStatus() != 'I' {
			// The connection could not end its transaction (a cancelled
			// ctx): it must not go back to the pool mid-transaction.
			c.Close(context.WithoutCancel(ctx))
			return errors.Join(err, sql.ErrConnDone)
		}
		return err
	})
}

// batch runs stmts in one round trip as one implicit transaction: pgx sends
// them with a single Sync and no BEGIN, so the server commits after the
// last one succeeds, or rolls back at the first error and skips the rest,
// before any result is read. Each READ COMMITTED statement still takes its
// own snapshot, so a statement after the advisory lock sees what committed
// before the lock was granted.
func batch(ctx context.Context, pool *sql.DB, stmts []sqlstore.PipelineStmt) error {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("postgres: batch needs a pgx connection, got %T", dc)
		}
		c := sc.Conn()
		b := &pgx.Batch{}
		for _, s := range stmts {
			b.Queue(sqlstore.RebindDollar(s.Query), s.Args...)
		}
		br := c.SendBatch(ctx, b)
		var err error
		for _, s := range stmts {
			if s.Row != nil {
				err = s.Row(row{br.QueryRow()})
			} else {
				_, err = br.Exec()
			}
			if err != nil {
				break
			}
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil && !c.IsClosed() && c.PgConn().TxStatus() != 'I' {
			// Not at the end of the implicit transaction (a cancelled
			// ctx): the connection must not go back to the pool.
			c.Close(context.WithoutCancel(ctx))
			return errors.Join(err, sql.ErrConnDone)
		}
		return err
	})
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
