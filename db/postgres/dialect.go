package postgres

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"strings"
	"time"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

//go:embed schema/*.sql
var schemaFS embed.FS

// Dialect returns Postgres's SQL for the shared store and for migrate, with
// the tables in schema (empty means DefaultSchema): $n placeholders, JSONB,
// advisory locks around run_index assignment and schema creation, and the
// versioned DDL in schema/.
func Dialect(schema string) *sqlstore.Dialect {
	if schema == "" {
		schema = DefaultSchema
	}
	ddl, _ := fs.Sub(schemaFS, "schema")
	d := &sqlstore.Dialect{
		Name:      "postgres",
		Schema:    schema,
		DDL:       ddl,
		Quote:     sqlstore.QuoteDouble,
		Rebind:    sqlstore.RebindDollar,
		Upsert:    sqlstore.OnConflict,
		RunUpsert: sqlstore.RunUpsertLockThenWrite,
		// jsonb cannot hold U+0000 (SQLSTATE 22P05 refuses the statement).
		JSONWithoutNUL: true,
		// Nor does text (SQLSTATE 22021).
		TextWithoutNUL: true,
		LockSession: func(string) string {
			return "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))"
		},
		// The same lock, taken by an InitPlan that runs before the
		// session row is inserted or updated.
		LockingSessionID: "(SELECT CAST(? AS VARCHAR) FROM pg_advisory_xact_lock(hashtextextended(?, 0)))",
		// Concurrent callers' pipelines share a transaction (pipegroup.go).
		Pipeline:  newPipeGroups().pipeline,
		Batch:     batch,
		QueryRows: queryRows,
		// pgx caches statements by text; a bound LIMIT would let a generic
		// plan guess the row count.
		CacheStatements: false,
		BindLimit:       false,
		// Postgres plans a first or keyset page on the index with an
		// incremental sort by itself.
		IndexFirstPage:  func(bool) bool { return false },
		JSONField:       func(col, field string) string { return fmt.Sprintf("(%s->>'%s')", col, field) },
		JSONString:      func(col string) string { return fmt.Sprintf("(%s #>> '{}')", col) },
		JSONArrayHasAny: jsonArrayHasAny,
		LikeContains:    func(expr string) string { return fmt.Sprintf("LOWER(%s) LIKE ? ESCAPE '\\'", expr) },
		// NoIndex stays nil: Postgres plans these queries well from its
		// statistics, and an expression there only hides them.
		Types: sqlstore.SQLTypes{Key: "VARCHAR", Text: "TEXT", BigInt: "BIGINT", JSON: "JSONB"},
		Catalog: sqlstore.Catalog{
			Tables: func(table string) (string, []any) {
				return "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2", []any{schema, table}
			},
			Columns: func(table string) (string, []any) {
				return "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2", []any{schema, table}
			},
			Indexes: func(_, index string) (string, []any) {
				return "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = $2", []any{schema, index}
			},
			PrimaryKeys: func(table string) (string, []any) {
				return "SELECT count(*) FROM information_schema.table_constraints WHERE table_schema = $1 AND table_name = $2 AND constraint_type = 'PRIMARY KEY'",
					[]any{schema, table}
			},
		},
		DDLInTx: true,
		LockSchema: func(ctx context.Context, q sqlstore.Querier, key string) (func(), error) {
			_, err := q.ExecContext(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", key+":"+schema)
			return func() {}, err // released when the transaction ends
		},
		LockMigration: lockMigration,
		Migration: sqlstore.MigrationTraits{
			JSONText:    func(col string) string { return col + "::text" },
			JSONNotNull: jsonNotNull,
			BinaryJSON: &sqlstore.BinaryJSON{
				Convert: func(table, col string) string {
					return fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s TYPE JSONB USING %s::jsonb", table, col, col)
				},
				// An escaped backslash followed by u0000 counts too: it
				// only makes the check conservative.
				HoldsNUL: func(table, col string) (string, []any) {
					return fmt.Sprintf("SELECT EXISTS (SELECT 1 FROM %s WHERE strpos(%s::text, $1) > 0)", table, col), []any{`\u0000`}
				},
			},
			TypedJSON:        true,
			DeferIndexes:     true,
			DeferForeignKeys: deferForeignKeys,
			InsertRuns:       insertRuns,
			TuneCopy:         tuneCopy,
			GuardedDrop:      guardedDrop,
		},
	}
	d.DropIndex = func(table, index string) []string {
		// A unique index may back a constraint (tables the drivers created).
		return []string{"ALTER TABLE " + d.Table(table) + " DROP CONSTRAINT IF EXISTS " + d.Quote(index),
			"DROP INDEX IF EXISTS " + d.Table(index)}
	}
	return d
}

func jsonArrayHasAny(col string, n int) string {
	ph := strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
	return fmt.Sprintf("(jsonb_typeof(%[1]s) = 'array' AND EXISTS (SELECT 1 FROM jsonb_array_elements_text(%[1]s) AS t(v) WHERE t.v IN (%[2]s)))", col, ph)
}

// lockMigration takes a session advisory lock on a dedicated connection;
// the server releases it when the holder dies.
func lockMigration(ctx context.Context, db *sql.DB, name string, timeout time.Duration) (func(), error) {
	h := fnv.New64a()
	h.Write([]byte(name))
	key := int64(h.Sum64())
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: connect for lock: %w", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		var ok bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok); err != nil {
			conn.Close()
			return nil, fmt.Errorf("migrate: take advisory lock: %w", err)
		}
		if ok {
			return func() {
				_, _ = conn.ExecContext(context.Background(), "SELECT pg_advisory_unlock($1)", key)
				conn.Close()
			}, nil
		}
		if err := sqlstore.WaitRetry(ctx, deadline); err != nil {
			conn.Close()
			return nil, err
		}
	}
}
