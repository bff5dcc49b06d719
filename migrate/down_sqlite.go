package migrate

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// SQLite's ALTER TABLE … DROP COLUMN refuses a column that an index, a table
// constraint (UNIQUE, PRIMARY KEY, CHECK) or a foreign key names. Tables made
// by the earlier 3.0 DDL declare metrics' unique (user_id, date,
// aggregation_period) inline, so going down rebuilds such a table without the
// column: SQLite's documented twelve-step rebuild
// (https://www.sqlite.org/lang_altertable.html#otheralter), in one transaction.

// sqliteIndex is one index of a table as SQLite reports it.
type sqliteIndex struct {
	name   string
	origin string // "c" CREATE INDEX, "u" UNIQUE constraint, "pk" primary key
	unique bool
	sql    string // the CREATE INDEX statement; empty for constraint indexes
	cols   []string
}

func (m *Manager) sqliteIndexes(ctx context.Context, q queryer, table string) ([]sqliteIndex, error) {
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
		cols, err := m.stringColumnQ(ctx, q, "SELECT COALESCE(name, '') FROM pragma_index_info(?) ORDER BY seqno", out[i].name)
		if err != nil {
			return nil, err
		}
		out[i].cols = cols
	}
	return out, nil
}

// sqliteDropPlan says how a column leaves a SQLite table: "" for a plain
// DROP COLUMN, "rebuild" when an index or constraint names it. It fails when
// neither works (the column is part of a foreign key, or the table has
// foreign keys a rebuild would have to carry over), so Down can refuse before
// it changes anything. skip names indexes Down drops first.
func (m *Manager) sqliteDropPlan(ctx context.Context, table, col string, skip ...string) (string, error) {
	fkCols, err := m.stringColumnQ(ctx, m.cfg.DB, `SELECT "from" FROM pragma_foreign_key_list(?)`, table)
	if err != nil {
		return "", fmt.Errorf("list foreign keys of %s: %w", table, err)
	}
	if slices.Contains(fkCols, col) {
		return "", fmt.Errorf("table %s: column %s is part of a foreign key: drop the column by hand", table, col)
	}
	ixs, err := m.sqliteIndexes(ctx, m.cfg.DB, table)
	if err != nil {
		return "", err
	}
	plan := ""
	for _, ix := range ixs {
		if !slices.Contains(skip, ix.name) && slices.Contains(ix.cols, col) {
			plan = "rebuild"
		}
	}
	if plan == "rebuild" && len(fkCols) > 0 {
		return "", fmt.Errorf("table %s: column %s is named by an index or constraint, and the table has foreign keys a rebuild would not keep: drop the column by hand", table, col)
	}
	return plan, nil
}

// rebuildWithout recreates a SQLite table without one column, keeping its
// rows, column types, NOT NULL, defaults and primary key, its other indexes,
// and its other unique constraints (as unique indexes).
func (m *Manager) rebuildWithout(ctx context.Context, table, col string) error {
	conn, err := m.cfg.DB.Conn(ctx)
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
		def := m.quote(name) + " " + typ
		if notNull {
			def += " NOT NULL"
		}
		if dflt != nil {
			def += " DEFAULT " + *dflt
		}
		defs = append(defs, def)
		kept = append(kept, m.quote(name))
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
		defs = append(defs, "PRIMARY KEY ("+m.quoteList(names)+")")
	}
	ixs, err := m.sqliteIndexes(ctx, tx, table)
	if err != nil {
		return err
	}
	tmp := "_agentry_rebuild_" + table
	stmts := []string{
		"DROP TABLE IF EXISTS " + m.quote(tmp),
		"CREATE TABLE " + m.quote(tmp) + " (" + strings.Join(defs, ", ") + ")",
		"INSERT INTO " + m.quote(tmp) + " (" + strings.Join(kept, ", ") + ") SELECT " + strings.Join(kept, ", ") + " FROM " + m.quote(table),
		"DROP TABLE " + m.quote(table),
		"ALTER TABLE " + m.quote(tmp) + " RENAME TO " + m.quote(table),
	}
	for _, ix := range ixs {
		if slices.Contains(ix.cols, col) || slices.Contains(ix.cols, "") {
			continue // expression indexes cannot be told apart; the column's own go with it
		}
		switch {
		case ix.origin == "c" && ix.sql != "":
			stmts = append(stmts, ix.sql)
		case ix.origin == "u":
			stmts = append(stmts, "CREATE UNIQUE INDEX "+m.quote("uq_"+table+"_"+strings.Join(ix.cols, "_"))+" ON "+m.quote(table)+" ("+m.quoteList(ix.cols)+")")
		}
	}
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("rebuild %s without %s: %s: %w", table, col, s, err)
		}
	}
	return tx.Commit()
}
