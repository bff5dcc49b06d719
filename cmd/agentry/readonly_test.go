package main

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/migrate/migratetest"
)

// legacyRollbackSQLite builds an Agno 2.x SQLite file as Agno leaves it: in
// rollback-journal mode (not WAL), holding the canonical sessions.
func legacyRollbackSQLite(t *testing.T, sessions []migratetest.Session) string {
	t.Helper()
	sqlDB, path := migratetest.SQLite(t)
	ctx := context.Background()
	l := migratetest.Layout{Dialect: "sqlite"}
	if err := migratetest.Create(ctx, sqlDB, l); err != nil {
		t.Fatal(err)
	}
	if err := migratetest.Insert(ctx, sqlDB, l, migratetest.All(sessions)); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlDB.Exec("PRAGMA journal_mode=DELETE"); err != nil {
		t.Fatal(err)
	}
	sqlDB.Close()
	return path
}

// fileState is what a read-only command must leave unchanged: the database
// file's bytes and modification time and the names in its directory.
type fileState struct {
	data  []byte
	mtime time.Time
	names []string
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return fileState{data: data, mtime: fi.ModTime(), names: names}
}

// Read-only commands and a refused serve leave an Agno 2.x SQLite file as
// they found it: same bytes (the header's journal mode included: it used to
// switch to WAL on every open), same mtime, no new file beside it.
func TestReadOnly_CommandsLeaveA2xSQLiteFileUntouched(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"migrate", "status"},
		{"migrate", "status", "--json"},
		{"migrate", "up", "--dry-run"},
		{"migrate", "down", "--to", "2.5.6", "--dry-run"},
		{"migrate", "cleanup", "--dry-run"},
		{"runs", "list", "--limit", "5"},
		{"runs", "get", "run-a1"},
		{"serve", "--port", "0"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			path := legacyRollbackSQLite(t, migratetest.Canonical())
			before := stateOf(t, path)
			if args[0] == "serve" {
				args = append(args, "--data-dir", filepath.Join(t.TempDir(), "data"))
			}
			code, out, errOut := cli(t, append(args, "--db", path)...)
			after := stateOf(t, path)
			if !bytes.Equal(before.data, after.data) {
				i := 0
				for i < min(len(before.data), len(after.data)) && before.data[i] == after.data[i] {
					i++
				}
				t.Errorf("the file changed at byte %d (code %d, out %.200q, err %.300q)", i, code, out, errOut)
			}
			if !before.mtime.Equal(after.mtime) {
				t.Errorf("mtime changed: %s → %s", before.mtime, after.mtime)
			}
			if !slices.Equal(before.names, after.names) {
				t.Errorf("directory %v became %v", before.names, after.names)
			}
		})
	}
}

// A SQLite path that does not exist is an error naming it, for every
// command that only reads or migrates; nothing is created.
func TestReadOnly_MissingSQLitePathIsAnErrorNamingIt(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"migrate", "status"},
		{"migrate", "up"},
		{"migrate", "up", "--dry-run"},
		{"migrate", "down", "--to", "2.5.6"},
		{"migrate", "cleanup", "--force"},
		{"runs", "list", "--limit", "5"},
		{"runs", "get", "run-1"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "typo.db")
			code, out, errOut := cli(t, append(args, "--db", path)...)
			if code == 0 || !strings.Contains(errOut, path) || !strings.Contains(errOut, "does not exist") {
				t.Errorf("code %d out %q stderr %q: want an error naming %s", code, out, errOut, path)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("%s was created", path)
			}
		})
	}
}

// The "migration required" error repeats the --db the user gave, so that
// copy-pasting its command migrates this database (not a new ./agentry.db).
func TestMigrate_MigrationRequiredErrorRepeatsTheDB(t *testing.T) {
	t.Parallel()
	path := legacyRollbackSQLite(t, migratetest.Canonical())
	for _, args := range [][]string{
		{"runs", "list", "--limit", "5"},
		{"serve", "--port", "0", "--data-dir", filepath.Join(t.TempDir(), "data")},
		{"run", "--model", "scripted:" + writeFile(t, "s.yaml", script), "hi"},
	} {
		code, _, errOut := cli(t, append(args, "--db", path)...)
		if want := "agentry migrate up --db " + path; code == 0 || !strings.Contains(errOut, want) {
			t.Errorf("%v: code %d stderr %q, want it to say %q", args, code, errOut, want)
		}
	}
}

func openSQLiteForTest(path string) (*sql.DB, error) {
	return sql.Open("sqlite", migratetest.SQLiteDSN(path))
}
