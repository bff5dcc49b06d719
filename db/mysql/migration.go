package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

// binarySessionID gives a MySQL sessions table's session_id the collation of
// the 3.0 runs table (utf8mb4_bin): a 2.x table made with the server's default
// collation cannot be the target of the runs table's foreign key otherwise.
func binarySessionID(ctx context.Context, db *sql.DB, table string, dryRun bool) ([]string, error) {
	var colType string
	var coll sql.NullString
	err := db.QueryRowContext(ctx, `SELECT column_type, collation_name FROM information_schema.columns
WHERE table_schema = DATABASE() AND table_name = ? AND column_name = 'session_id'`, table).Scan(&colType, &coll)
	if err != nil {
		return nil, fmt.Errorf("read session_id collation: %w", err)
	}
	if coll.String == "utf8mb4_bin" {
		return nil, nil
	}
	action := "convert session_id to utf8mb4_bin (" + coll.String + " cannot back the runs foreign key)"
	if dryRun {
		return []string{action}, nil
	}
	q := fmt.Sprintf("ALTER TABLE %s MODIFY session_id %s CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL", quote(table), colType)
	if _, err := db.ExecContext(ctx, q); err != nil {
		return nil, fmt.Errorf("convert session_id to utf8mb4_bin: %w", err)
	}
	return []string{action}, nil
}

// guardedDrop checks and drops under LOCK TABLES on one connection: DDL
// commits on its own here, so no transaction can hold the check and the
// drop together, but a WRITE table lock keeps other sessions' writes (and
// reads) off the table until UNLOCK TABLES.
func guardedDrop(ctx context.Context, db *sql.DB, table, col string, also []string, check func(sqlstore.Querier) error) (err error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	locks := []string{table + " WRITE"}
	for _, t := range also {
		locks = append(locks, t+" READ")
	}
	if _, err := c.ExecContext(ctx, "LOCK TABLES "+strings.Join(locks, ", ")); err != nil {
		return fmt.Errorf("lock %s: %w", table, err)
	}
	defer func() {
		if _, uerr := c.ExecContext(context.WithoutCancel(ctx), "UNLOCK TABLES"); uerr != nil && err == nil {
			err = uerr
		}
	}()
	if err := check(c); err != nil {
		return err
	}
	_, err = c.ExecContext(ctx, "ALTER TABLE "+table+" DROP COLUMN "+col)
	return err
}
