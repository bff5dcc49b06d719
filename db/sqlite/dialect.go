package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/agentryhq/agentry/internal/sqlstore"
)

//go:embed schema/*.sql
var schemaFS embed.FS

// Dialect returns SQLite's SQL for the shared store and for migrate: one
// writer connection (writes queue in arrival order and one INSERT … ON
// CONFLICT … RETURNING assigns a run_index atomically), JSON kept as text
// (Agno double-encodes some of it), and the versioned DDL in schema/.
func Dialect() *sqlstore.Dialect {
	ddl, _ := fs.Sub(schemaFS, "schema")
	return &sqlstore.Dialect{
		Name:            "sqlite",
		DDL:             ddl,
		Quote:           sqlstore.QuoteDouble,
		Upsert:          sqlstore.OnConflict,
		RunUpsert:       sqlstore.RunUpsertOneStatement,
		SingleWriter:    true,
		CacheStatements: true,
		BindLimit:       true,
		// SQLite without statistics sorts the whole session for a first
		// page; a keyset page's run_index range picks the index by itself.
		IndexFirstPage:  func(keyset bool) bool { return !keyset },
		JSONField:       jsonField,
		JSONString:      jsonString,
		JSONArrayHasAny: jsonArrayHasAny,
		LikeContains:    func(expr string) string { return fmt.Sprintf("LOWER(%s) LIKE ? ESCAPE '\\'", expr) },
		// A unary plus keeps SQLite's planner off an index (it picks
		// agent_id's for a session's history without statistics).
		NoIndex: func(col string) string { return "+" + col },
		// octet_length reads a TEXT value's size from the record header
		// (SQLite ≥ 3.43), without loading the value's overflow pages.
		ByteLength: func(col string) string { return "octet_length(" + col + ")" },
		Types:      sqlstore.SQLTypes{Key: "TEXT", Text: "TEXT", BigInt: "INTEGER", JSON: "TEXT"},
		// SQLite resolves table and index names ignoring ASCII case, as
		// NOCASE compares: the look-ups answer for the object a statement
		// naming it would use (CREATE TABLE IF NOT EXISTS AGNO_SESSIONS is a
		// no-op next to agno_sessions).
		Catalog: sqlstore.Catalog{
			Tables: func(table string) (string, []any) {
				return "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ? COLLATE NOCASE", []any{table}
			},
			Columns: func(table string) (string, []any) {
				return "SELECT name, type FROM pragma_table_info(?)", []any{table}
			},
			Indexes: func(_, index string) (string, []any) {
				return "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ? COLLATE NOCASE", []any{index}
			},
		},
		DDLInTx:       true,
		LockMigration: lockMigration,
		WALCheckpoint: walCheckpoint,
		DropIndex: func(_, index string) []string {
			return []string{"DROP INDEX " + sqlstore.QuoteDouble(index)}
		},
		Migration: sqlstore.MigrationTraits{
			StringEncodedJSON: true,
			ColumnDropper:     columnDropper,
			CopyWriter:        copyWriter,
		},
	}
}

// copyWriter raises the copy writer's page cache to 32 MiB while the copy
// runs (index maintenance then does not slow down as the runs table grows)
// and, in WAL mode, stops its commits waiting for fsync; restore puts the
// old settings back.
func copyWriter(ctx context.Context, w *sql.Conn) (func(), error) {
	var cache, sync int64
	var journal string
	err := w.QueryRowContext(ctx, "SELECT cache_size, synchronous, journal_mode FROM pragma_cache_size, pragma_synchronous, pragma_journal_mode").Scan(&cache, &sync, &journal)
	if err != nil {
		return nil, fmt.Errorf("migrate: read connection settings: %w", err)
	}
	set := []string{"PRAGMA cache_size = -32768"}
	if strings.EqualFold(journal, "wal") && sync > 1 {
		// In WAL mode NORMAL never corrupts; a power cut can only lose the
		// last batches, together with their checkpoint.
		set = append(set, "PRAGMA synchronous = NORMAL")
	}
	for _, p := range set {
		if _, err := w.ExecContext(ctx, p); err != nil {
			return nil, fmt.Errorf("migrate: %s: %w", p, err)
		}
	}
	return func() {
		bg := context.Background()
		_, _ = w.ExecContext(bg, fmt.Sprintf("PRAGMA cache_size = %d", cache))
		_, _ = w.ExecContext(bg, fmt.Sprintf("PRAGMA synchronous = %d", sync))
	}, nil
}

// walCheckpoint runs a PASSIVE checkpoint, or with restart a TRUNCATE one,
// and returns the WAL's length in frames. The pragma is scanned, not
// executed: it does its work as it steps to its result row.
func walCheckpoint(ctx context.Context, q sqlstore.Querier, restart bool) (frames int64, err error) {
	mode := "PASSIVE"
	if restart {
		mode = "TRUNCATE"
	}
	var busy, done int64
	err = q.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &frames, &done)
	return frames, err
}

// jsonValue unwraps a JSON column to its value, removing one layer of Agno's
// double encoding (a JSON string holding JSON text).
func jsonValue(col string) string {
	return fmt.Sprintf("(CASE WHEN json_valid(%[1]s) AND json_type(%[1]s) = 'text' THEN json_extract(%[1]s, '$') ELSE %[1]s END)", col)
}

func jsonField(col, field string) string {
	v := jsonValue(col)
	return fmt.Sprintf("(CASE WHEN json_valid(%[1]s) THEN json_extract(%[1]s, '$.%[2]s') END)", v, field)
}

func jsonString(col string) string {
	return fmt.Sprintf("(CASE WHEN json_valid(%[1]s) THEN json_extract(%[1]s, '$') ELSE %[1]s END)", col)
}

func jsonArrayHasAny(col string, n int) string {
	ph := strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
	v := jsonValue(col)
	return fmt.Sprintf("(json_valid(%[1]s) AND json_type(%[1]s) = 'array' AND EXISTS (SELECT 1 FROM json_each(%[1]s) WHERE value IN (%[2]s)))", v, ph)
}

// lockMigration takes an flock on a file next to the database, which the
// kernel releases when the holder dies. An in-memory database needs none:
// no other process can see it.
func lockMigration(ctx context.Context, db *sql.DB, _ string, timeout time.Duration) (func(), error) {
	var seq int
	var name, file string
	rows, err := db.QueryContext(ctx, "PRAGMA database_list")
	if err != nil {
		return nil, fmt.Errorf("migrate: find database file: %w", err)
	}
	for rows.Next() {
		var n, f string
		if err := rows.Scan(&seq, &n, &f); err != nil {
			rows.Close()
			return nil, err
		}
		if n == "main" {
			name, file = n, f
		}
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		// Without the list, the lock would silently not be taken.
		return nil, fmt.Errorf("migrate: find database file: %w", err)
	}
	if name == "" || file == "" {
		return func() {}, nil
	}
	deadline := time.Now().Add(timeout)
	for {
		release, ok, err := flockFile(file + ".migrate-lock")
		if err != nil {
			return nil, fmt.Errorf("migrate: lock %s: %w", file, err)
		}
		if ok {
			return release, nil
		}
		if err := sqlstore.WaitRetry(ctx, deadline); err != nil {
			return nil, err
		}
	}
}
