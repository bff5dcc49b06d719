package migrate

import (
	"context"
	"fmt"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

// queryer is what catalog look-ups need: a *sql.DB, *sql.Conn or *sql.Tx.
type queryer = sqlstore.Querier

// catalog answers questions about tables, columns and indexes of one schema
// with the dialect's catalog queries.
type catalog struct {
	d *sqlstore.Dialect
}

func (c catalog) count(ctx context.Context, q queryer, query string, args []any) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, query, args...).Scan(&n)
	return n, err
}

func (c catalog) tableExists(ctx context.Context, q queryer, table string) (bool, error) {
	// The dialect's look-up resolves names as its server does (SQLite
	// ignoring ASCII case): compared exactly, Up took a sessions table
	// configured as AGNO_SESSIONS for missing next to agno_sessions,
	// "created" it (a no-op) and stamped it 3.0.0 with every run left in
	// the legacy column.
	query, args := c.d.Catalog.Tables(table)
	n, err := c.count(ctx, q, query, args)
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
	query, args := c.d.Catalog.Indexes(table, index)
	n, err := c.count(ctx, q, query, args)
	if err != nil {
		return false, fmt.Errorf("migrate: look up index %s: %w", index, err)
	}
	return n > 0, nil
}

// jsonText renders a JSON column as text in a SELECT list.
func (m *Manager) jsonText(col string) string {
	if f := m.sd.Migration.JSONText; f != nil {
		return f(col)
	}
	return col
}
