package sqlite_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/run"
)

// snapshot is what a read-only open must not change.
type snapshot struct {
	data  []byte
	mtime int64
	names []string
}

func snap(t *testing.T, path string) snapshot {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	es, _ := os.ReadDir(filepath.Dir(path))
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return snapshot{data, fi.ModTime().UnixNano(), names}
}

// A read-only open reads a database without changing it: same bytes, same
// mtime, no file left beside it, whether the file is in WAL mode (an Agentry
// database) or in rollback-journal mode (as Agno leaves it); a write
// through it fails.
func TestOpen_ReadOnlyChangesNothing(t *testing.T) {
	t.Parallel()
	for _, journal := range []string{"wal", "delete"} {
		t.Run(journal, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "a.db")
			d, err := sqlite.Open(ctx, sqlite.Config{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeAgent}); err != nil {
				t.Fatal(err)
			}
			if _, err := d.UpsertRun(ctx, &db.Run{RunID: "r1", SessionID: "s1", RunType: run.TypeAgent, RunData: []byte(`{"run_id":"r1"}`)}); err != nil {
				t.Fatal(err)
			}
			d.Close()
			if journal == "delete" {
				exec(t, rawDB(t, path), "PRAGMA journal_mode=DELETE")
			}
			before := snap(t, path)

			ro, err := sqlite.Open(ctx, sqlite.Config{Path: path, ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if r, err := ro.GetRun(ctx, "r1"); err != nil || r.RunID != "r1" {
				t.Errorf("GetRun = %v, %v", r, err)
			}
			target, err := ro.Driver().(db.SQLBacked).SQLTarget()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := target.DB.Exec("CREATE TABLE x (id INTEGER)"); err == nil {
				t.Error("a write through a read-only store succeeded")
			}
			target.Release()
			if _, err := ro.UpsertSession(ctx, &db.Session{SessionID: "s2", SessionType: run.TypeAgent}); err == nil {
				t.Error("UpsertSession on a read-only store succeeded")
			}
			ro.Close()

			after := snap(t, path)
			if !bytes.Equal(before.data, after.data) || before.mtime != after.mtime {
				t.Error("the database file changed")
			}
			if !slices.Equal(before.names, after.names) {
				t.Errorf("files beside the database: %v, then %v", before.names, after.names)
			}
		})
	}
}

// A read-only open (or one that must find an existing file) never creates
// the file, and says what is wrong with the path.
func TestOpen_ReadOnlyNeedsAnExistingFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cfg  sqlite.Config
		want string
	}{
		{sqlite.Config{Path: filepath.Join(dir, "missing.db"), ReadOnly: true}, "missing.db does not exist"},
		{sqlite.Config{Path: filepath.Join(dir, "missing.db"), MustExist: true, SkipSchemaCheck: true}, "missing.db does not exist"},
		{sqlite.Config{Path: dir, ReadOnly: true}, "is a directory"},
		{sqlite.Config{Path: empty, ReadOnly: true}, "no Agentry tables"},
	}
	for _, tc := range tests {
		_, err := sqlite.Open(ctx, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%+v) = %v, want an error saying %q", tc.cfg, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); !os.IsNotExist(err) {
		t.Error("missing.db was created")
	}
	if fi, _ := os.Stat(empty); fi.Size() != 0 {
		t.Error("the empty file was written")
	}
}

// A 2.x database refused with ErrMigrationRequired is left as it was: the
// switch to WAL comes after the schema check.
func TestOpen_RefusedDatabaseKeepsItsJournalMode(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agno.db")
	raw := rawDB(t, path)
	exec(t, raw, `CREATE TABLE agno_sessions (session_id TEXT PRIMARY KEY, session_type TEXT NOT NULL, runs TEXT, created_at INTEGER NOT NULL)`,
		`INSERT INTO agno_sessions VALUES ('s1', 'agent', '[]', 1)`)
	raw.Close()
	before := snap(t, path)
	if _, err := sqlite.Open(ctx, sqlite.Config{Path: path}); !errors.Is(err, db.ErrMigrationRequired) {
		t.Fatalf("Open = %v, want ErrMigrationRequired", err)
	}
	after := snap(t, path)
	if !bytes.Equal(before.data, after.data) || before.mtime != after.mtime || !slices.Equal(before.names, after.names) {
		t.Errorf("a refused open changed the file (header bytes 18-19: %v → %v)", before.data[18:20], after.data[18:20])
	}
}
