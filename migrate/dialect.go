package migrate

import (
	"context"
	"fmt"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

// Dialect names the SQL flavour of a database.
type Dialect string

// Supported dialects: the storage layer's names.
const (
	SQLite   Dialect = sqlstore.SQLite
	Postgres Dialect = sqlstore.Postgres
	MySQL    Dialect = sqlstore.MySQL
)

func (d Dialect) valid() bool { return d == SQLite || d == Postgres || d == MySQL }

// Column types per dialect. Keys are VARCHAR on MySQL, which rejects TEXT keys.
func (d Dialect) keyType() string {
	switch d {
	case SQLite:
		return "TEXT"
	case MySQL:
		return "VARCHAR(255)"
	}
	return "VARCHAR"
}

func (d Dialect) strType() string  { return d.keyType() }
func (d Dialect) textType() string { return "TEXT" }
func (d Dialect) bigintType() string {
	if d == SQLite {
		return "INTEGER"
	}
	return "BIGINT"
}
func (d Dialect) jsonType() string {
	switch d {
	case SQLite:
		return "TEXT"
	case Postgres:
		return "JSONB"
	}
	return "JSON"
}

// textOf renders a JSON column as text in a SELECT list.
func (d Dialect) textOf(col string) string {
	switch d {
	case Postgres:
		return col + "::text"
	case MySQL:
		return "CAST(" + col + " AS CHAR)"
	}
	return col
}

// insertIgnore wraps a multi-row INSERT so that a row whose key exists is skipped.
// conflict lists the key columns; anyKey is one of them (MySQL's no-op update).
func (d Dialect) insertIgnore(table, cols, values, conflict, anyKey string) string {
	switch d {
	case MySQL:
		return "INSERT INTO " + table + " (" + cols + ") VALUES " + values +
			" ON DUPLICATE KEY UPDATE " + anyKey + " = " + anyKey
	default:
		return "INSERT INTO " + table + " (" + cols + ") VALUES " + values +
			" ON CONFLICT (" + conflict + ") DO NOTHING"
	}
}

// queryer is what catalog look-ups need: a *sql.DB, *sql.Conn or *sql.Tx.
type queryer = sqlstore.Querier

// catalog answers questions about tables, columns and indexes of one schema.
type catalog struct {
	d *sqlstore.Dialect
}

func (c catalog) tableExists(ctx context.Context, q queryer, table string) (bool, error) {
	var n int
	var err error
	switch c.d.Name {
	case sqlstore.SQLite:
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n)
	case sqlstore.Postgres:
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2`, c.d.Schema, table).Scan(&n)
	case sqlstore.MySQL:
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?`, table).Scan(&n)
	}
	if err != nil {
		return false, fmt.Errorf("migrate: look up table %s: %w", table, err)
	}
	return n > 0, nil
}

// columns returns the table's column names mapped to their lower-case data type.
func (c catalog) columns(ctx context.Context, q queryer, table string) (map[string]string, error) {
	cols, err := sqlstore.ColumnTypes(ctx, q, c.d, table)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return cols, nil
}

func (c catalog) indexExists(ctx context.Context, q queryer, table, index string) (bool, error) {
	var n int
	var err error
	switch c.d.Name {
	case sqlstore.SQLite:
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?`, index).Scan(&n)
	case sqlstore.Postgres:
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = $2`, c.d.Schema, index).Scan(&n)
	case sqlstore.MySQL:
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?`, table, index).Scan(&n)
	}
	if err != nil {
		return false, fmt.Errorf("migrate: look up index %s: %w", index, err)
	}
	return n > 0, nil
}
