package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
)

// walBound is the largest -wal file tolerated after the writes below.
// SQLite checkpoints when the WAL reaches 1,000 pages (4 MiB) and then
// rewrites it from the start, so a WAL that is checkpointed stays near
// 4 MiB; one that is not grows by ~55 KB a run (over 50 MB here).
const walBound = 8 << 20

// walWrites is how many writes each case makes.
const walWrites = 1000

// walWriters are the ways a server writes: each must let SQLite checkpoint.
var walWriters = []struct {
	name  string
	write func(ctx context.Context, d *db.DB, i int, r *db.Run) error
}{
	{"UpsertRun", func(ctx context.Context, d *db.DB, _ int, r *db.Run) error {
		_, err := d.UpsertRun(ctx, r)
		return err
	}},
	{"UpsertSession", func(ctx context.Context, d *db.DB, i int, _ *db.Run) error {
		_, err := d.UpsertSession(ctx, &db.Session{SessionID: fmt.Sprintf("s-%d", i), SessionType: run.TypeAgent,
			SessionData: []byte(fmt.Sprintf(`{"session_state":{"n":%d}}`, i))})
		return err
	}},
	{"SaveRun", func(ctx context.Context, d *db.DB, i int, r *db.Run) error {
		_, _, err := d.SaveRun(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent, SessionData: []byte(fmt.Sprintf(`{"n":%d}`, i))}, r)
		return err
	}},
}

// TestWAL_StaysBoundedWhileServing writes runs and sessions the way a server
// does, without the periodic checkpoint, and checks that SQLite's automatic
// checkpoint keeps the WAL bounded (it never ran when RETURNING results were
// left unread).
func TestWAL_StaysBoundedWhileServing(t *testing.T) {
	t.Parallel()
	for _, tc := range walWriters {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "wal.db")
			d, err := sqlite.Open(ctx, sqlite.Config{Path: path, CheckpointInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}); err != nil {
				t.Fatal(err)
			}
			for i, r := range dbtest.BenchRuns("s", walWrites) {
				if err := tc.write(ctx, d, i, r); err != nil {
					t.Fatal(err)
				}
			}
			if n := walSize(t, path); n > walBound {
				t.Fatalf("after %d writes the WAL is %d bytes, want at most %d: it is not being checkpointed", walWrites, n, walBound)
			}
		})
	}
}

// TestWAL_PeriodicCheckpointBoundsTheWAL turns SQLite's automatic checkpoint
// off on the writer and checks that the periodic checkpoint alone keeps the
// WAL bounded.
func TestWAL_PeriodicCheckpointBoundsTheWAL(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "wal.db")
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path, CheckpointInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	st, _ := sqlstore.FromDB(d)
	if _, err := st.SQL().ExecContext(ctx, "PRAGMA wal_autocheckpoint=0"); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}); err != nil {
		t.Fatal(err)
	}
	const writes = 2 * walWrites
	for _, r := range dbtest.BenchRuns("s", writes) {
		if _, _, err := d.SaveRun(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}, r); err != nil {
			t.Fatal(err)
		}
	}
	// The backstop empties the WAL once it is past 2,000 frames (8 MiB);
	// the writes made while a checkpoint runs come on top. Unchecked, the
	// WAL would be over 100 MB.
	const bound = 32 << 20
	if n := walSize(t, path); n > bound {
		t.Fatalf("after %d writes with a 5 ms checkpoint interval the WAL is %d bytes, want at most %d", writes, n, bound)
	}
}

// TestWAL_CheckpointStopsOnClose checks that Close stops the periodic
// checkpoint's goroutine. Not parallel: it counts goroutines.
func TestWAL_CheckpointStopsOnClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wal.db")
	before := runtime.NumGoroutine()
	for range 20 {
		d, err := sqlite.Open(ctx, sqlite.Config{Path: path, CheckpointInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
	}
	// database/sql's own goroutines end asynchronously: allow them a moment.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+5 {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after 20 open/close cycles, %d before: the checkpoint keeps running after Close", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func walSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path + "-wal")
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
