package postgres

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

// jsonNotNull is true when a legacy JSON column holds something other than
// JSON null, asked of the type where it can say so.
func jsonNotNull(col, colType string) string {
	switch colType {
	case "jsonb":
		return "jsonb_typeof(" + col + ") <> 'null'"
	case "json":
		return "json_typeof(" + col + ") <> 'null'"
	}
	return col + "::text NOT IN ('null', '\"null\"')"
}

// deferForeignKeys drops the runs table's foreign keys for the copy
// (checking each row costs about a fifth of the insert) and returns the
// statements that add them back, validating every row at once.
func deferForeignKeys(ctx context.Context, tx *sql.Tx, runsTable string) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint
WHERE conrelid = $1::regclass AND contype = 'f' ORDER BY conname`, runsTable)
	if err != nil {
		return nil, fmt.Errorf("read foreign keys of %s: %w", runsTable, err)
	}
	var names, ddl []string
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, name)
		ddl = append(ddl, fmt.Sprintf("ALTER TABLE %s ADD CONSTRAINT %s %s", runsTable, sqlstore.QuoteDouble(name), def))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, err := tx.ExecContext(ctx, "ALTER TABLE "+runsTable+" DROP CONSTRAINT "+sqlstore.QuoteDouble(n)); err != nil {
			return nil, fmt.Errorf("defer foreign key %s: %w", n, err)
		}
	}
	return ddl, nil
}

// insertRuns writes the copy's rows as one array per column expanded by
// unnest: one small statement per chunk instead of thousands of parameters,
// measurably cheaper for the server to parse and plan. Empty strings of the
// nullable columns become NULL.
func insertRuns(runsTable, cols string) string {
	return "INSERT INTO " + runsTable + " (" + cols + `)
SELECT r, s, t, NULLIF(a, ''), NULLIF(tm, ''), NULLIF(w, ''), NULLIF(u, ''), NULLIF(p, ''), NULLIF(st, ''), i, d::jsonb, c, up
FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
	$10::bigint[], $11::text[], $12::bigint[], $13::bigint[]) AS x(r, s, t, a, tm, w, u, p, st, i, d, c, up)
ON CONFLICT (run_id) DO NOTHING`
}

// tuneCopy relaxes each copy transaction: its commit need not wait for the
// WAL flush (a server crash can only lose whole batches together with their
// checkpoint, which the next Up redoes), and run_data is compressed with lz4
// where the server has it (much cheaper than pglz; readers decode either).
func tuneCopy(ctx context.Context, db *sql.DB) func(context.Context, *sql.Tx) error {
	var n int
	err := db.QueryRowContext(ctx, "SELECT count(*) FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY(enumvals)").Scan(&n)
	lz4 := err == nil && n > 0
	return func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
			return fmt.Errorf("migrate: tune copy transaction: %w", err)
		}
		if lz4 {
			if _, err := tx.ExecContext(ctx, "SET LOCAL default_toast_compression = 'lz4'"); err != nil {
				return fmt.Errorf("migrate: tune copy transaction: %w", err)
			}
		}
		return nil
	}
}

// guardedDrop checks and drops in one transaction that first takes a lock
// conflicting with every write to the table (DDL is transactional here).
func guardedDrop(ctx context.Context, db *sql.DB, table, col string, _ []string, check func(sqlstore.Querier) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "LOCK TABLE "+table+" IN SHARE ROW EXCLUSIVE MODE"); err != nil {
		return fmt.Errorf("lock %s: %w", table, err)
	}
	if err := check(tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "ALTER TABLE "+table+" DROP COLUMN "+col); err != nil {
		return err
	}
	return tx.Commit()
}
