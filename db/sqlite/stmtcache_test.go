package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db"
)

// writerOf is the writer pool of an opened store.
func writerOf(t *testing.T) *db.DB {
	t.Helper()
	d, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestStmtCache_ReusesPreparedStatements(t *testing.T) {
	ctx := context.Background()
	w := writerOf(t).Driver().(db.SQLWriter).SQLWriter().DB
	if _, err := w.ExecContext(ctx, `CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)`); err != nil {
		t.Fatal(err)
	}
	before := stmtCacheHits.Load()
	for i := range 50 {
		if _, err := w.ExecContext(ctx, `INSERT INTO t (k, v) VALUES (?, ?)`, i, fmt.Sprint("v", i)); err != nil {
			t.Fatal(err)
		}
		var v string
		if err := w.QueryRowContext(ctx, `SELECT v FROM t WHERE k = ?`, i).Scan(&v); err != nil || v != fmt.Sprint("v", i) {
			t.Fatalf("row %d: %q, %v", i, v, err)
		}
	}
	if hits := stmtCacheHits.Load() - before; hits < 96 {
		t.Fatalf("%d cache hits for 100 executions of two statements, want ≥ 96", hits)
	}
}

func TestStmtCache_NestedSameQueryAndSchemaChange(t *testing.T) {
	ctx := context.Background()
	w := writerOf(t).Driver().(db.SQLWriter).SQLWriter().DB
	for _, s := range []string{`CREATE TABLE t (k INTEGER PRIMARY KEY)`, `INSERT INTO t VALUES (1), (2), (3)`} {
		if _, err := w.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	const q = `SELECT k FROM t ORDER BY k`
	outer, err := tx.QueryContext(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for outer.Next() {
		// The same text while its cached statement's rows are open.
		inner, err := tx.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		m := 0
		for inner.Next() {
			m++
		}
		inner.Close()
		if m != 3 {
			t.Fatalf("inner query saw %d rows", m)
		}
		n++
	}
	outer.Close()
	if n != 3 {
		t.Fatalf("outer query saw %d rows", n)
	}
	// A cached SELECT * sees a column added after it was prepared.
	if _, err := tx.ExecContext(ctx, `ALTER TABLE t ADD COLUMN v TEXT DEFAULT 'x'`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var k int
	var v string
	if err := w.QueryRowContext(ctx, `SELECT * FROM t WHERE k = 2`).Scan(&k, &v); err != nil {
		t.Fatal(err)
	}
	if _, err := w.ExecContext(ctx, `ALTER TABLE t ADD COLUMN u INTEGER DEFAULT 7`); err != nil {
		t.Fatal(err)
	}
	var u int
	if err := w.QueryRowContext(ctx, `SELECT * FROM t WHERE k = 2`).Scan(&k, &v, &u); err != nil || u != 7 {
		t.Fatalf("after a second column: u=%d, %v", u, err)
	}
}
