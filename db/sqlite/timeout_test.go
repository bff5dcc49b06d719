package sqlite_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/run"
)

// TestQueryTimeout_AWriteLockedDatabaseIsUnavailableWithinTheBound holds
// the write lock from another connection: a write gives up at the query
// timeout with db.ErrUnavailable, not after the (longer) busy timeout.
// A read stays possible (WAL).
func TestQueryTimeout_AWriteLockedDatabaseIsUnavailableWithinTheBound(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "locked.db")
	const bound = 200 * time.Millisecond
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path, QueryTimeout: bound, BusyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent})
	if !errors.Is(err, db.ErrUnavailable) || !strings.Contains(err.Error(), "locked by another connection or process (waited 200ms)") {
		t.Fatalf("write under another process's lock: %v, want db.ErrUnavailable naming the lock and the bound", err)
	}
	if took := time.Since(start); took > 10*bound {
		t.Fatalf("the write took %s with a %s bound", took, bound)
	}
	if _, err := d.GetSession(ctx, "s"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("a read while another process writes: %v", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}); err != nil {
		t.Fatalf("after the lock is released: %v", err)
	}
}
