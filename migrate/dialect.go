package migrate

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
)

// Dialect names the SQL flavour of a database.
type Dialect string

// Supported dialects.
const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
	MySQL    Dialect = "mysql"
)

func (d Dialect) valid() bool { return d == SQLite || d == Postgres || d == MySQL }

// quote quotes one identifier.
func (d Dialect) quote(name string) string {
	if d == MySQL {
		return "`" + strings.ReplaceAll(name, "`", "``") + "`"
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// rebind turns ? placeholders into $n for Postgres. Queries built here never
// hold a literal question mark.
func (d Dialect) rebind(q string) string {
	if d != Postgres || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 16)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}

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
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// catalog answers questions about tables, columns and indexes of one schema.
type catalog struct {
	d      Dialect
	schema string // Postgres only
}

func (c catalog) tableExists(ctx context.Context, q queryer, table string) (bool, error) {
	var n int
	var err error
	switch c.d {
	case SQLite:
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, table).Scan(&n)
	case Postgres:
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2`, c.schema, table).Scan(&n)
	case MySQL:
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?`, table).Scan(&n)
	}
	if err != nil {
		return false, fmt.Errorf("migrate: look up table %s: %w", table, err)
	}
	return n > 0, nil
}

// columns returns the table's column names mapped to their lower-case data type.
func (c catalog) columns(ctx context.Context, q queryer, table string) (map[string]string, error) {
	var rows *sql.Rows
	var err error
	switch c.d {
	case SQLite:
		rows, err = q.QueryContext(ctx, `SELECT name, type FROM pragma_table_info(?)`, table)
	case Postgres:
		rows, err = q.QueryContext(ctx, `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2`, c.schema, table)
	case MySQL:
		rows, err = q.QueryContext(ctx, `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?`, table)
	}
	if err != nil {
		return nil, fmt.Errorf("migrate: list columns of %s: %w", table, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, err
		}
		out[strings.ToLower(name)] = strings.ToLower(typ)
	}
	return out, rows.Err()
}

func (c catalog) indexExists(ctx context.Context, q queryer, table, index string) (bool, error) {
	var n int
	var err error
	switch c.d {
	case SQLite:
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?`, index).Scan(&n)
	case Postgres:
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = $2`, c.schema, index).Scan(&n)
	case MySQL:
		err = q.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?`, table, index).Scan(&n)
	}
	if err != nil {
		return false, fmt.Errorf("migrate: look up index %s: %w", index, err)
	}
	return n > 0, nil
}
