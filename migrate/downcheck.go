package migrate

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

// downDDL is the DDL a table's 3.0.0 step down runs that the server can
// refuse because of an object Agentry did not create (a view, a CHECK
// constraint, a generated column, a foreign key): the drop of the runs
// table for the sessions table, the drop of user_id and its indexes for the
// others.
type downDDL struct {
	table string
	// dropTable names the table the step drops ("" for none).
	dropTable string
	// indexes are the indexes over user_id the step drops first (those the
	// table has); dropUserID whether it then drops the column.
	indexes    []string
	dropUserID bool
}

// downDDLs lists the DDL of the 3.0.0 steps down of sts.
func (m *Manager) downDDLs(ctx context.Context, sts []TableStatus) ([]downDDL, error) {
	var out []downDDL
	for _, st := range sts {
		if st.Current != "3.0.0" {
			continue
		}
		switch st.Kind {
		case KindSessions:
			ok, err := m.cat.tableExists(ctx, m.cfg.DB, m.tables.Runs)
			if err != nil {
				return nil, err
			}
			if ok {
				out = append(out, downDDL{table: st.Table, dropTable: m.tables.Runs})
			}
		case KindEvals, KindKnowledge, KindMetrics:
			cols, err := m.cat.columns(ctx, m.cfg.DB, st.Table)
			if err != nil {
				return nil, err
			}
			if _, ok := cols["user_id"]; !ok {
				continue
			}
			d := downDDL{table: st.Table, dropUserID: true}
			for _, idx := range downDroppedIndexes(st.Table) {
				ok, err := m.cat.indexExists(ctx, m.cfg.DB, st.Table, idx)
				if err != nil {
					return nil, err
				}
				if ok {
					d.indexes = append(d.indexes, idx)
				}
			}
			out = append(out, d)
		}
	}
	return out, nil
}

// tryDownDDL fails, naming the table, when the server would refuse a
// statement of a step down (dialects without a ColumnDropper: Postgres and
// MySQL). Each table steps on its own, and MySQL's DDL commits by itself,
// so a refusal found at its step leaves the tables before it stepped down.
// Postgres runs every statement in one transaction it rolls back: its DDL
// is transactional, and the server itself judges dependencies (views,
// foreign keys, rules). MySQL's is not: it runs the column drops on an
// empty temporary copy of each table (CREATE TEMPORARY TABLE … LIKE keeps
// CHECK constraints and generated columns), and reads the foreign keys, which
// the copy lacks, from the catalog. Neither leaves anything behind, so both
// run on a database opened read-only too (`agentry migrate down --dry-run`
// opens it so): Postgres's transaction is made READ WRITE for the trial,
// which a server that cannot write (a hot standby) refuses; the check is
// then skipped with a warning.
func (m *Manager) tryDownDDL(ctx context.Context, sts []TableStatus) error {
	ddls, err := m.downDDLs(ctx, sts)
	if err != nil || len(ddls) == 0 {
		return err
	}
	if m.sd.Upsert == sqlstore.OnDuplicateKey {
		return m.tryDownDDLMySQL(ctx, ddls)
	}
	if !m.sd.DDLInTx {
		return nil
	}
	tx, err := m.cfg.DB.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if m.readOnly {
		// Rolled back below: the session's read-only default is kept for
		// everything that could commit.
		if _, err := tx.ExecContext(ctx, "SET TRANSACTION READ WRITE"); err != nil {
			m.log.Warn("migrate: cannot check the steps down on this read-only server", "err", err)
			return nil
		}
	}
	// The trial takes the locks its DROPs need until the rollback: on a
	// live database it must not queue behind a long transaction and hold
	// every later reader of the table behind it (a dry run would stall
	// the servers). It gives up after trialLockTimeout instead.
	if _, err := tx.ExecContext(ctx, "SET LOCAL lock_timeout = '"+trialLockTimeout+"'"); err != nil {
		return err
	}
	for _, d := range ddls {
		var stmts []string
		if d.dropTable != "" {
			stmts = append(stmts, "DROP TABLE "+m.qualify(d.dropTable))
		}
		for _, idx := range d.indexes {
			stmts = append(stmts, m.sd.DropIndex(d.table, idx)...)
		}
		if d.dropUserID {
			stmts = append(stmts, "ALTER TABLE "+m.qualify(d.table)+" DROP COLUMN user_id")
		}
		for _, s := range stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				if lockTimedOut(err) {
					return fmt.Errorf("%w: table %s is in use by other sessions (no lock within %s); stop the servers using the database and run down again", ErrTablesInUse, d.table, trialLockTimeout)
				}
				return d.refused(err)
			}
		}
	}
	return nil
}

// ErrTablesInUse is Down's check (and its dry run) finding a table it would
// change locked by another session past trialLockTimeout: servers still use
// the database.
var ErrTablesInUse = errors.New("migrate: tables in use")

// trialLockTimeout bounds each lock wait of tryDownDDL's Postgres trial.
const trialLockTimeout = "5s"

// lockTimedOut reports whether err is Postgres's lock_not_available
// (SQLSTATE 55P03: lock_timeout expired).
func lockTimedOut(err error) bool {
	var se interface{ SQLState() string }
	return errors.As(err, &se) && se.SQLState() == "55P03"
}

// downCheckTable is the temporary table tryDownDDLMySQL tries a drop on.
const downCheckTable = "agentry_down_check"

func (m *Manager) tryDownDDLMySQL(ctx context.Context, ddls []downDDL) error {
	conn, err := m.cfg.DB.Conn(ctx)
	if err != nil {
		return err
	}
	tmp := m.quote(downCheckTable)
	// Close returns the connection to the pool, temporary table included:
	// drop it on every way out.
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), "DROP TEMPORARY TABLE IF EXISTS "+tmp)
		conn.Close()
	}()
	for _, d := range ddls {
		if d.dropTable != "" {
			if err := m.foreignKeysInto(ctx, conn, d.dropTable, ""); err != nil {
				return d.refused(err)
			}
		}
		if !d.dropUserID {
			continue
		}
		if err := m.foreignKeysInto(ctx, conn, d.table, "user_id"); err != nil {
			return d.refused(err)
		}
		stmts := []string{"DROP TEMPORARY TABLE IF EXISTS " + tmp, "CREATE TEMPORARY TABLE " + tmp + " LIKE " + m.qualify(d.table)}
		for _, idx := range d.indexes {
			stmts = append(stmts, m.sd.DropIndex(downCheckTable, idx)...)
		}
		stmts = append(stmts, "ALTER TABLE "+tmp+" DROP COLUMN user_id")
		for _, s := range stmts {
			if _, err := conn.ExecContext(ctx, s); err != nil {
				return d.refused(err)
			}
		}
	}
	return nil
}

// errForeignKey says a foreign key stops a step down's DROP.
var errForeignKey = errors.New("a foreign key needs it")

// foreignKeysInto fails when a foreign key of another table references
// table (column "") or any foreign key involves table's column.
func (m *Manager) foreignKeysInto(ctx context.Context, q queryer, table, column string) error {
	query := `SELECT constraint_name, table_name FROM information_schema.key_column_usage
WHERE table_schema = DATABASE() AND referenced_table_name IS NOT NULL AND `
	var args []any
	if column == "" {
		query += "CAST(referenced_table_name AS BINARY) = CAST(? AS BINARY) AND CAST(table_name AS BINARY) <> CAST(? AS BINARY)"
		args = []any{table, table}
	} else {
		query += `((CAST(table_name AS BINARY) = CAST(? AS BINARY) AND column_name = ?)
OR (CAST(referenced_table_name AS BINARY) = CAST(? AS BINARY) AND referenced_column_name = ?))`
		args = []any{table, column, table, column}
	}
	var name, from string
	err := q.QueryRowContext(ctx, query+" LIMIT 1", args...).Scan(&name, &from)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("read foreign keys: %w", err)
	}
	return fmt.Errorf("%w: foreign key %s of table %s", errForeignKey, name, from)
}

// refused says which statement of the table's step down the server refuses.
func (d downDDL) refused(err error) error {
	what := "drop column user_id"
	if d.dropTable != "" {
		what = "drop table " + d.dropTable
	}
	return fmt.Errorf("%s's step down cannot %s: %w; drop or change what depends on it, then run down again", d.table, what, err)
}
