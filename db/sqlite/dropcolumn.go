package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

// SQLite's ALTER TABLE … DROP COLUMN refuses a column that an index, a table
// constraint (UNIQUE, PRIMARY KEY, CHECK) or a foreign key names. Tables made
// by the earlier 3.0 DDL declare metrics' unique (user_id, date,
// aggregation_period) inline, so going down rebuilds such a table without the
// column: SQLite's documented twelve-step rebuild
// (https://www.sqlite.org/lang_altertable.html#otheralter), in one transaction.
// migrate's Down uses it through the dialect's Migration.ColumnDropper.

var columnDropper = &sqlstore.ColumnDropper{Plan: dropPlan, Rebuild: rebuildWithout}

func quote(ident string) string { return sqlstore.QuoteDouble(ident) }

func quoteList(cols []string) string {
	q := make([]string, len(cols))
	for i, c := range cols {
		q[i] = quote(c)
	}
	return strings.Join(q, ", ")
}

// sqliteIndex is one index of a table as SQLite reports it.
type sqliteIndex struct {
	name   string
	origin string // "c" CREATE INDEX, "u" UNIQUE constraint, "pk" primary key
	unique bool
	sql    string // the CREATE INDEX statement; empty for constraint indexes
	cols   []string
}

func indexesOf(ctx context.Context, q sqlstore.Querier, table string) ([]sqliteIndex, error) {
	rows, err := q.QueryContext(ctx, `SELECT l.name, l.origin, l."unique", COALESCE(s.sql, '')
FROM pragma_index_list(?) AS l LEFT JOIN sqlite_master AS s ON s.type = 'index' AND s.name = l.name`, table)
	if err != nil {
		return nil, fmt.Errorf("list indexes of %s: %w", table, err)
	}
	var out []sqliteIndex
	for rows.Next() {
		var ix sqliteIndex
		if err := rows.Scan(&ix.name, &ix.origin, &ix.unique, &ix.sql); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, ix)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		cols, err := sqlstore.QueryStrings(ctx, q, "SELECT COALESCE(name, '') FROM pragma_index_info(?) ORDER BY seqno", out[i].name)
		if err != nil {
			return nil, err
		}
		out[i].cols = cols
	}
	return out, nil
}

// dropPlan says how a column leaves a SQLite table: a plain DROP COLUMN
// (false), or a rebuild (true) when an index or constraint names it. It fails when
// neither works (the column is part of a foreign key, or the table has
// foreign keys a rebuild would have to carry over), so Down can refuse before
// it changes anything. skip names indexes Down drops first.
func dropPlan(ctx context.Context, q sqlstore.Querier, table, col string, skip ...string) (rebuild bool, err error) {
	fkCols, err := sqlstore.QueryStrings(ctx, q, `SELECT "from" FROM pragma_foreign_key_list(?)`, table)
	if err != nil {
		return false, fmt.Errorf("list foreign keys of %s: %w", table, err)
	}
	if slices.Contains(fkCols, col) {
		return false, fmt.Errorf("table %s: column %s is part of a foreign key: drop the column by hand", table, col)
	}
	ixs, err := indexesOf(ctx, q, table)
	if err != nil {
		return false, err
	}
	for _, ix := range ixs {
		if !slices.Contains(skip, ix.name) && slices.Contains(ix.cols, col) {
			rebuild = true
		}
	}
	if rebuild && len(fkCols) > 0 {
		return false, fmt.Errorf("table %s: column %s is named by an index or constraint, and the table has foreign keys a rebuild would not keep: drop the column by hand", table, col)
	}
	return rebuild, nil
}

// rebuildWithout recreates a SQLite table without one column, keeping its
// rows, column types, NOT NULL, defaults and primary key, its other indexes,
// and its other unique constraints (as unique indexes).
func rebuildWithout(ctx context.Context, db *sql.DB, table, col string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var fks int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM pragma_foreign_key_list(?)", table).Scan(&fks); err != nil {
		return fmt.Errorf("list foreign keys of %s: %w", table, err)
	}
	if fks > 0 {
		return fmt.Errorf("table %s has foreign keys a rebuild would not keep: drop column %s by hand", table, col)
	}
	rows, err := tx.QueryContext(ctx, `SELECT name, type, "notnull", dflt_value, pk FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		return fmt.Errorf("read columns of %s: %w", table, err)
	}
	var defs, kept []string
	type pkCol struct {
		name string
		pos  int
	}
	var pks []pkCol
	for rows.Next() {
		var name, typ string
		var notNull bool
		var dflt *string
		var pk int
		if err := rows.Scan(&name, &typ, &notNull, &dflt, &pk); err != nil {
			rows.Close()
			return err
		}
		if strings.EqualFold(name, col) {
			continue
		}
		def := quote(name) + " " + typ
		if notNull {
			def += " NOT NULL"
		}
		if dflt != nil {
			def += " DEFAULT " + *dflt
		}
		defs = append(defs, def)
		kept = append(kept, quote(name))
		if pk > 0 {
			pks = append(pks, pkCol{name, pk})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(pks) > 0 {
		slices.SortFunc(pks, func(a, b pkCol) int { return a.pos - b.pos })
		names := make([]string, len(pks))
		for i, p := range pks {
			names[i] = p.name
		}
		defs = append(defs, "PRIMARY KEY ("+quoteList(names)+")")
	}
	ixs, err := indexesOf(ctx, tx, table)
	if err != nil {
		return err
	}
	tmp := "_agentry_rebuild_" + table
	stmts := []string{
		"DROP TABLE IF EXISTS " + quote(tmp),
		"CREATE TABLE " + quote(tmp) + " (" + strings.Join(defs, ", ") + ")",
		"INSERT INTO " + quote(tmp) + " (" + strings.Join(kept, ", ") + ") SELECT " + strings.Join(kept, ", ") + " FROM " + quote(table),
		"DROP TABLE " + quote(table),
		"ALTER TABLE " + quote(tmp) + " RENAME TO " + quote(table),
	}
	for _, ix := range ixs {
		if slices.Contains(ix.cols, col) || slices.Contains(ix.cols, "") {
			continue // expression indexes cannot be told apart; the column's own go with it
		}
		switch {
		case ix.origin == "c" && ix.sql != "":
			stmts = append(stmts, ix.sql)
		case ix.origin == "u":
			stmts = append(stmts, "CREATE UNIQUE INDEX "+quote("uq_"+table+"_"+strings.Join(ix.cols, "_"))+" ON "+quote(table)+" ("+quoteList(ix.cols)+")")
		}
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("rebuild %s without %s: %s: %w", table, col, s, err)
		}
	}
	return tx.Commit()
}
