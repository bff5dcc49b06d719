package migrate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// On SQLite, Agno 2.x declares the metrics table's unique key on (date,
// aggregation_period) inside CREATE TABLE (CONSTRAINT … UNIQUE), which no
// ALTER removes: Up rebuilds the table without it, SQLite's documented way
// (https://www.sqlite.org/lang_altertable.html#otheralter), in one
// transaction. The new table is created from the old one's own statement
// with only that clause cut out (column types, NOT NULL, defaults, keys,
// CHECKs and collations stay as written); rows are copied by column name;
// the other indexes and triggers are created again from their statements;
// and the new table's columns, indexes and foreign keys are compared with
// the old one's before the commit. As SQLite's procedure says, foreign keys
// are off on the rebuild's connection: on, the DROP TABLE deleted every row
// first, firing other tables' ON DELETE actions onto the metrics table
// (CASCADE deleted their rows). No foreign key may be broken at the commit
// that was not before. legacy_alter_table is on for the rename: off, SQLite
// checks every view and trigger against the schema, and one reading the
// metrics table (dropped at that point) failed the rename. Down restores the key as a unique index of the same
// name (restoreLegacyMetricsUnique), which 2.x's ON CONFLICT (date,
// aggregation_period) accepts as it accepts the constraint.

// sqliteLegacyUnique matches the 2.x key's clause in a CREATE TABLE
// statement, with the comma before it, named or not.
func sqliteLegacyUnique(table string) *regexp.Regexp {
	id := func(s string) string { return "[\"`\\[]?" + regexp.QuoteMeta(s) + "[\"`\\]]?" }
	return regexp.MustCompile(`(?i),\s*(?:CONSTRAINT\s+` + id(legacyMetricsUnique(table)) + `\s+)?UNIQUE\s*\(\s*` + id("date") + `\s*,\s*` + id("aggregation_period") + `\s*\)`)
}

// sqliteLegacyMetricsUnique reports whether a SQLite metrics table holds
// the 2.x key as a table constraint (an index of origin "u" over exactly
// date, aggregation_period).
func (m *Manager) sqliteLegacyMetricsUnique(ctx context.Context, q queryer, table string) (bool, error) {
	names, err := m.stringColumnQ(ctx, q, "SELECT name FROM pragma_index_list(?) WHERE origin = 'u'", table)
	if err != nil {
		return false, fmt.Errorf("list the unique constraints of %s: %w", table, err)
	}
	for _, n := range names {
		cols, err := m.stringColumnQ(ctx, q, "SELECT COALESCE(name, '') FROM pragma_index_info(?) ORDER BY seqno", n)
		if err != nil {
			return false, err
		}
		if len(cols) == 2 && strings.EqualFold(cols[0], "date") && strings.EqualFold(cols[1], "aggregation_period") {
			return true, nil
		}
	}
	return false, nil
}

// rebuildSQLiteMetrics drops the 2.x key from a SQLite metrics table by
// rebuilding it (see above); it reports the action, or nothing when the
// table has no such constraint.
func (m *Manager) rebuildSQLiteMetrics(ctx context.Context, table string) ([]string, error) {
	has, err := m.sqliteLegacyMetricsUnique(ctx, m.cfg.DB, table)
	if err != nil || !has {
		return nil, err
	}
	action := "rebuild table to drop unique (date, aggregation_period) " + legacyMetricsUnique(table)
	if m.cfg.DryRun {
		return []string{action}, nil
	}
	conn, err := m.cfg.DB.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// Set before the transaction begins: foreign_keys is a no-op inside one.
	for _, p := range [][2]string{{"foreign_keys", "OFF"}, {"legacy_alter_table", "ON"}} {
		restore, err := setPragma(ctx, conn, p[0], p[1])
		if err != nil {
			return nil, err
		}
		defer restore()
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if err := m.rebuildSQLiteMetricsTx(ctx, tx, table); err != nil {
		return nil, fmt.Errorf("rebuild %s without the 2.x unique key (date, aggregation_period) (nothing changed): %w", table, err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("rebuild %s: %w", table, err)
	}
	return []string{action}, nil
}

func (m *Manager) rebuildSQLiteMetricsTx(ctx context.Context, tx *sql.Tx, table string) error {
	// Checked again in the transaction: another migration may have rebuilt it.
	if has, err := m.sqliteLegacyMetricsUnique(ctx, tx, table); err != nil || !has {
		return err
	}
	var name, create string // name as created (SQLite ignores case, Tables may not)
	if err := tx.QueryRowContext(ctx, "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE", table).Scan(&name, &create); err != nil {
		return fmt.Errorf("read the table's statement: %w", err)
	}
	table = name
	re := sqliteLegacyUnique(table)
	if n := len(re.FindAllStringIndex(create, -1)); n != 1 {
		return fmt.Errorf("its statement holds %d clauses UNIQUE (date, aggregation_period), not one: drop the key by hand (statement: %s)", n, create)
	}
	open := strings.Index(create, "(")
	if open < 0 {
		return fmt.Errorf("unexpected statement %s", create)
	}
	before, err := m.sqliteShape(ctx, tx, table)
	if err != nil {
		return err
	}
	var broken int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM pragma_foreign_key_check").Scan(&broken); err != nil {
		return fmt.Errorf("check foreign keys: %w", err)
	}
	extra, err := m.stringColumnQ(ctx, tx, "SELECT sql FROM sqlite_master WHERE type IN ('index', 'trigger') AND tbl_name = ? COLLATE NOCASE AND sql IS NOT NULL ORDER BY type, name", table)
	if err != nil {
		return fmt.Errorf("read the table's indexes and triggers: %w", err)
	}
	cols, err := m.stringColumnQ(ctx, tx, "SELECT name FROM pragma_table_info(?) ORDER BY cid", table)
	if err != nil {
		return err
	}
	for i, c := range cols {
		cols[i] = m.quote(c)
	}
	list := strings.Join(cols, ", ")
	tmp := "_agentry_rebuild_" + table
	stmts := []string{
		"DROP TABLE IF EXISTS " + m.quote(tmp),
		"CREATE TABLE " + m.quote(tmp) + " " + re.ReplaceAllString(create[open:], ""),
		"INSERT INTO " + m.quote(tmp) + " (" + list + ") SELECT " + list + " FROM " + m.quote(table),
		"DROP TABLE " + m.quote(table),
		"ALTER TABLE " + m.quote(tmp) + " RENAME TO " + m.quote(table),
	}
	stmts = append(stmts, extra...)
	for _, s := range stmts {
		if _, err := tx.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	after, err := m.sqliteShape(ctx, tx, table)
	if err != nil {
		return err
	}
	before.uniques = slices.DeleteFunc(before.uniques, func(u string) bool { return u == "date,aggregation_period" })
	if !slices.Equal(before.columns, after.columns) || !slices.Equal(before.indexes, after.indexes) || !slices.Equal(before.uniques, after.uniques) ||
		!slices.Equal(before.foreignKeys, after.foreignKeys) {
		return fmt.Errorf("the rebuilt table differs from the old one beyond the key: columns %v → %v, indexes %v → %v, unique constraints %v → %v, foreign keys %v → %v",
			before.columns, after.columns, before.indexes, after.indexes, before.uniques, after.uniques, before.foreignKeys, after.foreignKeys)
	}
	var brokenAfter int
	if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM pragma_foreign_key_check").Scan(&brokenAfter); err != nil {
		return fmt.Errorf("check foreign keys: %w", err)
	}
	if brokenAfter > broken {
		return fmt.Errorf("the rebuild would break foreign keys (PRAGMA foreign_key_check finds %d rows, %d before): drop the key by hand", brokenAfter, broken)
	}
	return nil
}

// setPragma sets a SQLite connection's pragma and returns what puts the
// old value back; a connection whose value cannot be put back is
// discarded, never handed back to the pool.
func setPragma(ctx context.Context, conn *sql.Conn, name, value string) (restore func(), err error) {
	var old string
	if err := conn.QueryRowContext(ctx, "PRAGMA "+name).Scan(&old); err != nil {
		return nil, fmt.Errorf("read PRAGMA %s: %w", name, err)
	}
	if _, err := conn.ExecContext(ctx, "PRAGMA "+name+" = "+value); err != nil {
		return nil, fmt.Errorf("set PRAGMA %s: %w", name, err)
	}
	return func() {
		if _, err := conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA "+name+" = "+old); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}, nil
}

// sqliteShape is what a rebuild must keep of a SQLite table: its columns
// (name, type, NOT NULL, default, key position, in order), its indexes'
// statements, the columns of its table-constraint unique keys, and its
// foreign keys.
type sqliteShape struct {
	columns, indexes, uniques, foreignKeys []string
}

func (m *Manager) sqliteShape(ctx context.Context, q queryer, table string) (sqliteShape, error) {
	var s sqliteShape
	var err error
	s.columns, err = m.stringColumnQ(ctx, q, `SELECT name || ' ' || type || ' ' || "notnull" || ' ' || COALESCE(dflt_value, 'NULL') || ' ' || pk FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		return s, fmt.Errorf("read the columns of %s: %w", table, err)
	}
	s.indexes, err = m.stringColumnQ(ctx, q, "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? COLLATE NOCASE AND sql IS NOT NULL ORDER BY name", table)
	if err != nil {
		return s, fmt.Errorf("read the indexes of %s: %w", table, err)
	}
	s.uniques, err = m.stringColumnQ(ctx, q, "SELECT (SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_index_info(l.name) ORDER BY seqno)) FROM pragma_index_list(?) AS l WHERE l.origin = 'u' ORDER BY 1", table)
	if err != nil {
		return s, fmt.Errorf("read the unique constraints of %s: %w", table, err)
	}
	s.foreignKeys, err = m.stringColumnQ(ctx, q, `SELECT id || ' ' || seq || ' ' || "table" || ' ' || "from" || ' ' || COALESCE("to", '') || ' ' || on_update || ' ' || on_delete || ' ' || "match" FROM pragma_foreign_key_list(?) ORDER BY id, seq`, table)
	if err != nil {
		return s, fmt.Errorf("read the foreign keys of %s: %w", table, err)
	}
	return s, nil
}
