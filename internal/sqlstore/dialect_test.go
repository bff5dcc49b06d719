package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	_ "modernc.org/sqlite"
)

// completeDialect has every required part (the SQL it writes is never run).
func completeDialect() *Dialect {
	q := func(string) (string, []any) { return "SELECT 0", nil }
	return &Dialect{
		Name:            "test",
		DDL:             ddlOf(Kinds...),
		Quote:           QuoteDouble,
		Upsert:          OnConflict,
		RunUpsert:       RunUpsertOneStatement,
		SingleWriter:    true,
		JSONField:       func(c, f string) string { return c },
		JSONString:      func(c string) string { return c },
		JSONArrayHasAny: func(c string, n int) string { return c },
		LikeContains:    func(e string) string { return e },
		Types:           SQLTypes{Key: "TEXT", Text: "TEXT", BigInt: "INTEGER", JSON: "TEXT"},
		Catalog:         Catalog{Tables: q, Columns: q, Indexes: func(string, string) (string, []any) { return "SELECT 0", nil }},
		LockMigration: func(context.Context, *sql.DB, string, time.Duration) (func(), error) {
			return func() {}, nil
		},
		DropIndex: func(string, string) []string { return nil },
	}
}

// ddlOf is a 3.0.0 DDL file with a section for each kind.
func ddlOf(kinds ...string) fstest.MapFS {
	var b strings.Builder
	for _, k := range kinds {
		b.WriteString("-- +table " + k + "\nCREATE TABLE {" + k + "_q} (a INT);\n\n")
	}
	return fstest.MapFS{Version30 + ".sql": {Data: []byte(b.String())}}
}

func TestDialectCheck_CompleteDialectPasses(t *testing.T) {
	t.Parallel()
	if err := completeDialect().Check(); err != nil {
		t.Fatal(err)
	}
}

// Every required part, and every combination that cannot work, is refused
// by name with ErrIncompleteDialect.
func TestDialectCheck_RefusesMissingOrInconsistentParts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		mod  func(d *Dialect)
		want string
	}{
		{"no name", func(d *Dialect) { d.Name = "" }, "Name"},
		{"no DDL", func(d *Dialect) { d.DDL = nil }, "DDL"},
		{"DDL without the 3.0.0 file", func(d *Dialect) { d.DDL = fstest.MapFS{"2.0.0.sql": {}} }, "DDL file 3.0.0.sql"},
		{"DDL without a table kind", func(d *Dialect) { d.DDL = ddlOf(KindSessions, KindRuns) }, "DDL section 3.0.0.sql -- +table memories"},
		{"no quoting", func(d *Dialect) { d.Quote = nil }, "Quote"},
		{"no upsert syntax", func(d *Dialect) { d.Upsert = 0 }, "Upsert"},
		{"no run upsert strategy", func(d *Dialect) { d.RunUpsert = 0 }, "RunUpsert"},
		{"unknown run upsert strategy", func(d *Dialect) { d.RunUpsert = 99 }, "RunUpsert"},
		{"no JSON field", func(d *Dialect) { d.JSONField = nil }, "JSONField"},
		{"no JSON string", func(d *Dialect) { d.JSONString = nil }, "JSONString"},
		{"no JSON array test", func(d *Dialect) { d.JSONArrayHasAny = nil }, "JSONArrayHasAny"},
		{"no LIKE", func(d *Dialect) { d.LikeContains = nil }, "LikeContains"},
		{"no JSON type", func(d *Dialect) { d.Types.JSON = "" }, "Types"},
		{"no table catalog", func(d *Dialect) { d.Catalog.Tables = nil }, "Catalog.Tables"},
		{"no column catalog", func(d *Dialect) { d.Catalog.Columns = nil }, "Catalog.Columns"},
		{"no index catalog", func(d *Dialect) { d.Catalog.Indexes = nil }, "Catalog.Indexes"},
		{"no migration lock", func(d *Dialect) { d.LockMigration = nil }, "LockMigration"},
		{"no index drop", func(d *Dialect) { d.DropIndex = nil }, "DropIndex"},
		{"one statement on a pooled writer", func(d *Dialect) { d.SingleWriter = false }, "SingleWriter"},
		{"lock then write without a session lock", func(d *Dialect) { d.RunUpsert = RunUpsertLockThenWrite }, "LockSession"},
		{"lock, read, write without a session lock", func(d *Dialect) { d.RunUpsert = RunUpsertLockReadWrite }, "LockSession"},
		{"RETURNING strategy on ON DUPLICATE KEY", func(d *Dialect) { d.Upsert = OnDuplicateKey }, "RunUpsert LockReadWrite"},
		{"ON DUPLICATE KEY without a duplicate-key test", func(d *Dialect) {
			d.Upsert, d.RunUpsert, d.LockSession = OnDuplicateKey, RunUpsertLockReadWrite, func(string) string { return "SELECT 1" }
		}, "DuplicateKey"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := completeDialect()
			tc.mod(d)
			err := d.Check()
			if !errors.Is(err, ErrIncompleteDialect) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want ErrIncompleteDialect naming %s", err, tc.want)
			}
		})
	}
	if err := (*Dialect)(nil).Check(); !errors.Is(err, ErrIncompleteDialect) {
		t.Fatalf("nil dialect: Check = %v, want ErrIncompleteDialect", err)
	}
}

// New refuses an incomplete dialect before it touches the database: no
// SQL of another backend runs in its place.
func TestNew_RefusesIncompleteDialect(t *testing.T) {
	t.Parallel()
	sqlDB, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	for _, d := range []*Dialect{nil, {Name: "sqlite"}} {
		if _, err := New(context.Background(), Config{Dialect: d, Writer: sqlDB}); !errors.Is(err, ErrIncompleteDialect) {
			t.Fatalf("New(%v) = %v, want ErrIncompleteDialect", d, err)
		}
	}
	var n int
	if err := sqlDB.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&n); err != nil || n != 0 {
		t.Fatalf("the refused store created %d objects (%v)", n, err)
	}
}

// A periodic WAL checkpoint needs the dialect's checkpoint statement.
func TestNew_RefusesCheckpointsWithoutWALCheckpoint(t *testing.T) {
	t.Parallel()
	sqlDB, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	_, err = New(context.Background(), Config{Dialect: completeDialect(), Writer: sqlDB, CheckpointInterval: time.Second})
	if !errors.Is(err, ErrIncompleteDialect) || !strings.Contains(err.Error(), "WALCheckpoint") {
		t.Fatalf("New = %v, want ErrIncompleteDialect naming WALCheckpoint", err)
	}
}
