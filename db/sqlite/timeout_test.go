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
	// The read below goes through a handle with a loose bound: on a loaded
	// machine a WAL read can take longer than 200ms by itself.
	reader, err := sqlite.Open(ctx, sqlite.Config{Path: path, QueryTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
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
	// Not a timing check: the busy timeout is a minute, so a write that
	// waited for it (not for the query bound) takes over half of that.
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("the write took %s with a %s bound: it waited for the busy timeout", took, bound)
	}
	if _, err := reader.GetSession(ctx, "s"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("a read while another process writes: %v", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}); err != nil {
		t.Fatalf("after the lock is released: %v", err)
	}
}
