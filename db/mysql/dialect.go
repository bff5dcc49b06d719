package mysql

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

//go:embed schema/*.sql
var schemaFS embed.FS

// Dialect returns MySQL's and MariaDB's SQL for the shared store and for
// migrate: backquotes, ON DUPLICATE KEY UPDATE (no RETURNING, so run writes
// lock the session row and read before they write), READ COMMITTED write
// transactions, GET_LOCK around DDL (which commits on its own), index hints,
// and the versioned DDL in schema/.
func Dialect() *sqlstore.Dialect {
	ddl, _ := fs.Sub(schemaFS, "schema")
	return &sqlstore.Dialect{
		Name:      "mysql",
		DDL:       ddl,
		Quote:     quote,
		Upsert:    sqlstore.OnDuplicateKey,
		RunUpsert: sqlstore.RunUpsertLockReadWrite,
		LockSession: func(sessionsTable string) string {
			return "SELECT session_id FROM " + sessionsTable + " WHERE session_id = ? FOR UPDATE"
		},
		// A statement after a lock must see rows committed before the lock
		// was granted.
		TxOptions:    &sql.TxOptions{Isolation: sql.LevelReadCommitted},
		DuplicateKey: duplicatePrimaryKey,
		// Two transactions creating the same new session can deadlock;
		// InnoDB rolls one back (error 1213) and SaveRun retries it.
		RetryTx:         func(err error) bool { return strings.Contains(err.Error(), "Error 1213") },
		CacheStatements: true,
		BindLimit:       true,
		JSONField: func(col, field string) string {
			return fmt.Sprintf("JSON_UNQUOTE(JSON_EXTRACT(%s, '$.%s'))", col, field)
		},
		JSONString:      func(col string) string { return fmt.Sprintf("JSON_UNQUOTE(%s)", col) },
		JSONArrayHasAny: jsonArrayHasAny,
		// Backslash is MySQL's default LIKE escape.
		LikeContains: func(expr string) string { return fmt.Sprintf("LOWER(%s) LIKE ?", expr) },
		NoIndex:      func(col string) string { return "CONCAT(" + col + ", '')" },
		// A binary string compares bytes: no padding ('alice' = 'alice '
		// holds under every PAD SPACE collation, utf8mb4_bin included) and
		// no case folding (Agno's tables are utf8mb4_general_ci). The
		// column's index still serves the comparison. CAST, not the BINARY
		// operator MySQL 8.0.27 deprecates.
		Exact: func(col string) string { return col + " = CAST(? AS BINARY)" },
		Bytes: func(col string) string { return "CAST(" + col + " AS BINARY)" },
		// MariaDB otherwise takes idx_session_id when the run_index bound
		// comes from a subquery and reads the whole session.
		ForceIndex: func(index string) string { return "FORCE INDEX (" + quote(index) + ")" },
		// Keys are VARCHAR: MySQL rejects TEXT keys.
		Types: sqlstore.SQLTypes{Key: "VARCHAR(255)", Text: "TEXT", BigInt: "BIGINT", JSON: "JSON", TableSuffix: " DEFAULT CHARSET=utf8mb4"},
		Catalog: sqlstore.Catalog{
			Tables: func(table string) (string, []any) {
				return "SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = ?", []any{table}
			},
			Columns: func(table string) (string, []any) {
				return "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = DATABASE() AND table_name = ?", []any{table}
			},
			Indexes: func(table, index string) (string, []any) {
				return "SELECT count(*) FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = ? AND index_name = ?",
					[]any{table, index}
			},
			PrimaryKeys: func(table string) (string, []any) {
				return "SELECT count(*) FROM information_schema.table_constraints WHERE table_schema = DATABASE() AND table_name = ? AND constraint_type = 'PRIMARY KEY'",
					[]any{table}
			},
		},
		DropIndex: func(table, index string) []string {
			return []string{"DROP INDEX " + quote(index) + " ON " + quote(table)}
		},
		DDLInTx:       false,
		LockSchema:    lockSchema,
		LockMigration: lockMigration,
		Migration: sqlstore.MigrationTraits{
			GuardedDrop: guardedDrop,
			JSONText:    func(col string) string { return "CAST(" + col + " AS CHAR)" },
			JSONNotNull: func(col, colType string) string {
				if colType == "json" { // MariaDB's JSON is a checked LONGTEXT: compared as text
					return "JSON_TYPE(" + col + ") <> 'NULL'"
				}
				return ""
			},
			TypedJSON:               true,
			DeferIndexes:            true,
			PrepareForeignKeyTarget: binarySessionID,
		},
	}
}

// duplicatePrimaryKey reports error 1062 (ER_DUP_ENTRY) on the primary key:
// "Duplicate entry '…' for key 'PRIMARY'" (MariaDB) or "… for key
// 'table.PRIMARY'" (MySQL 8). A duplicate on another unique key stays an
// error, as under ON CONFLICT (key) DO NOTHING.
func duplicatePrimaryKey(err error) bool {
	var me *gomysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1062 {
		return false
	}
	return strings.HasSuffix(me.Message, "'PRIMARY'") || strings.HasSuffix(me.Message, ".PRIMARY'")
}

func quote(ident string) string { return "`" + strings.ReplaceAll(ident, "`", "``") + "`" }

func jsonArrayHasAny(col string, n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf("JSON_CONTAINS(%s, JSON_QUOTE(?))", col)
	}
	return "(" + strings.Join(parts, " OR ") + ")"
}

// schemaLockWait bounds how long lockSchema waits for another opener.
const schemaLockWait = 30 * time.Second

// lockName is the server-wide lock name GET_LOCK uses for key in the
// connection's current database: MySQL lock names are global to the server,
// so without the database two deployments sharing a server would serialise.
// Names are at most 64 characters: a readable prefix of the key and a SHA-1 of
// key and database.
const lockName = "CONCAT(LEFT(?, 23), ':', SHA1(CONCAT(?, ':', COALESCE(DATABASE(), ''))))"

// lockSchema takes key's named lock for the current database on the
// connection, waiting up to schemaLockWait (or less if ctx ends first).
func lockSchema(ctx context.Context, q sqlstore.Querier, key string) (func(), error) {
	wait := schemaLockWait
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	var got sql.NullInt64
	err := q.QueryRowContext(ctx, "SELECT GET_LOCK("+lockName+", ?)", key, key, max(wait.Seconds(), 0.001)).Scan(&got)
	switch {
	case err != nil:
		return nil, fmt.Errorf("lock %q: %w", key, err)
	case !got.Valid:
		return nil, fmt.Errorf("lock %q: the server refused GET_LOCK", key)
	case got.Int64 != 1:
		return nil, fmt.Errorf("lock %q: another connection held it for %s: %w", key, wait.Round(time.Millisecond), context.DeadlineExceeded)
	}
	return func() {
		_, _ = q.ExecContext(context.WithoutCancel(ctx), "SELECT RELEASE_LOCK("+lockName+")", key, key)
	}, nil
}

// lockMigration takes a named lock for the current database on a dedicated
// connection; the server releases it when the holder dies.
func lockMigration(ctx context.Context, db *sql.DB, _ string, timeout time.Duration) (func(), error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: connect for lock: %w", err)
	}
	var dbName sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&dbName); err != nil {
		conn.Close()
		return nil, err
	}
	name := "agentry_migrate:" + dbName.String
	if len(name) > 64 {
		h := fnv.New64a()
		h.Write([]byte(name))
		name = fmt.Sprintf("agentry_migrate:%x", h.Sum64())
	}
	secs := int(timeout / time.Second)
	var got sql.NullInt64
	if err := conn.QueryRowContext(ctx, "SELECT GET_LOCK(?, ?)", name, max(secs, 1)).Scan(&got); err != nil {
		conn.Close()
		return nil, fmt.Errorf("migrate: take lock: %w", err)
	}
	if got.Int64 != 1 {
		conn.Close()
		return nil, sqlstore.ErrMigrationLocked
	}
	return func() {
		_, _ = conn.ExecContext(context.Background(), "SELECT RELEASE_LOCK(?)", name)
		conn.Close()
	}, nil
}
