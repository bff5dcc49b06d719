package sqlstore

import (
	"context"
	"database/sql"
)

// MigrationTraits describe how a backend stored Agno 2.x data and how the
// 2.x → 3.0 copy is best done on it. Zero values are the plain behaviour.
type MigrationTraits struct {
	// JSONText renders a JSON column as text in a SELECT list; nil means
	// the column as it is.
	JSONText func(col string) string
	// JSONNotNull is a condition true when col, of catalog type colType,
	// holds a value other than JSON null; nil or "" means a comparison of
	// its text with null and "null".
	JSONNotNull func(col, colType string) string
	// BinaryJSON, when set, says the 3.0 JSON type is binary (jsonb): Up
	// converts 2.x json columns to it, reads legacy JSON through JSONText,
	// and leaves a run holding \u0000, which binary JSON cannot store, in
	// the legacy column.
	BinaryJSON *BinaryJSON
	// TypedJSON: a column the catalog types json or jsonb holds only valid
	// JSON, so the copy need not validate it again.
	TypedJSON bool
	// StringEncodedJSON: 2.x wrote the legacy runs column as a JSON string
	// holding ASCII-escaped JSON text (Python's json.dumps), and Down writes
	// it back so.
	StringEncodedJSON bool
	// DeferIndexes: the copy creates the runs table's secondary indexes
	// after it (one bulk build per index beats maintaining them row by row
	// where run_data lives off-page).
	DeferIndexes bool
	// DeferForeignKeys drops the runs table's foreign keys for the copy
	// (within tx) and returns the statements that add them back; nil
	// keeps them.
	DeferForeignKeys func(ctx context.Context, tx *sql.Tx, runsTable string) (restore []string, err error)
	// InsertRuns, when set, builds the copy's insert-or-ignore of many runs
	// into runsTable (cols: the quoted columns, in DDL order) that takes one
	// argument per column: a []string or []int64 of every run's values,
	// empty strings standing for NULL; nil means a multi-row VALUES list.
	InsertRuns func(runsTable, cols string) string
	// PrepareForeignKeyTarget readies a 2.x sessions table's session_id to
	// be the target of the runs table's foreign key (MySQL: the binary
	// collation) and returns the actions it took, or would take when
	// dryRun; nil means nothing to do.
	PrepareForeignKeyTarget func(ctx context.Context, db *sql.DB, table string, dryRun bool) (actions []string, err error)
	// ColumnDropper drops a column that DROP COLUMN refuses because an
	// index or constraint names it; nil when DROP COLUMN always works.
	ColumnDropper *ColumnDropper
	// TuneCopy returns what relaxes one copy transaction (it may probe the
	// server once); nil means none.
	TuneCopy func(ctx context.Context, db *sql.DB) func(ctx context.Context, tx *sql.Tx) error
	// GuardedDrop runs check, then drops column col of table (both quoted),
	// keeping writers off table (and reads, as check's, of the tables in
	// also) in between, so that what check saw is what the drop removes; a
	// check error leaves the column. nil means one transaction on db, which
	// the backend fails when a write lands after check's reads (SQLite).
	GuardedDrop func(ctx context.Context, db *sql.DB, table, col string, also []string, check func(Querier) error) error
	// CopyWriter tunes the connection the copy writes on and returns what
	// restores it; nil means none.
	CopyWriter func(ctx context.Context, w *sql.Conn) (restore func(), err error)
}

// BinaryJSON converts 2.x json columns to a binary JSON type.
type BinaryJSON struct {
	// Convert is the statement that converts column col of table (both
	// quoted) to the binary type.
	Convert func(table, col string) string
	// HoldsNUL is a query of one boolean: whether a value of column col
	// of table (both quoted) holds the escape \u0000.
	HoldsNUL func(table, col string) (string, []any)
}

// ColumnDropper drops a column where ALTER TABLE … DROP COLUMN refuses one
// that an index or constraint names (SQLite).
type ColumnDropper struct {
	// Plan says whether dropping col needs Rebuild (skip names indexes
	// dropped first), and fails when neither way works, before anything
	// changed.
	Plan func(ctx context.Context, q Querier, table, col string, skip ...string) (rebuild bool, err error)
	// Rebuild recreates table without col, keeping its rows, other
	// columns, keys and other indexes.
	Rebuild func(ctx context.Context, db *sql.DB, table, col string) error
}
