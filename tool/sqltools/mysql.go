package sqltools

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentryhq/agentry/db/dsn"
)

// mysqlEngine runs on MySQL or MariaDB. Multi-statement mode stays off, so
// the server refuses a second statement in one call.
type mysqlEngine struct {
	db *sql.DB
}

func openMySQL(dsnText string) (*mysqlEngine, error) {
	d, err := dsn.Parse(dsnText)
	if err != nil {
		return nil, fmt.Errorf("sqltools: %w", err)
	}
	if d.Dialect != dsn.MySQL {
		return nil, fmt.Errorf("sqltools: %s is a %s DSN, not MySQL", d, d.Dialect)
	}
	cfg, err := gomysql.ParseDSN(d.Conn)
	if err != nil {
		return nil, fmt.Errorf("sqltools: mysql: invalid DSN: %w", err)
	}
	cfg.MultiStatements = false
	cfg.ParseTime = true
	cfg.AllowAllFiles = false
	conn, err := gomysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("sqltools: mysql: %w", err)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(4)
	return &mysqlEngine{db: db}, nil
}

func (e *mysqlEngine) close() error { return e.db.Close() }

func (e *mysqlEngine) listTables(ctx context.Context) ([]string, error) {
	return queryStrings(ctx, e.db, `SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() ORDER BY table_name`)
}

func (e *mysqlEngine) describeTable(ctx context.Context, table string) ([]Column, error) {
	rows, err := e.db.QueryContext(ctx, `
		SELECT column_name, column_type, is_nullable = 'YES', column_default, column_key = 'PRI'
		FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?
		ORDER BY ordinal_position`, table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var cols []Column
	for rows.Next() {
		var c Column
		var def sql.NullString
		if err := rows.Scan(&c.Name, &c.Type, &c.Nullable, &def, &c.Key); err != nil {
			return nil, err
		}
		if def.Valid {
			c.Default = &def.String
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

func (e *mysqlEngine) run(ctx context.Context, st statement, query string, out *resultWriter) error {
	conn, err := e.db.Conn(ctx)
	if err != nil {
		return err
	}
	// The session ends with the call: a user-level lock (GET_LOCK) or a user
	// variable survives a rollback, and on a pooled connection would outlive
	// the call.
	defer discard(conn)
	return runSQL(ctx, conn, &sql.TxOptions{ReadOnly: !st.write}, st, query, out)
}

// discard closes conn instead of returning it to the pool: database/sql
// drops a connection whose Raw callback reports it bad.
func discard(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}
