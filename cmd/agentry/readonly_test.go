package main

import (
	"bytes"
	"context"
	"database/sql"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/migrate"
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

// A migration leaves no lock file beside the database.
func TestMigrate_LeavesNoLockFile(t *testing.T) {
	t.Parallel()
	path := legacyRollbackSQLite(t, migratetest.Canonical())
	for _, args := range [][]string{
		{"migrate", "up"},
		{"migrate", "down", "--to", "2.5.6"},
		{"migrate", "up"},
		{"migrate", "cleanup", "--force"},
	} {
		cli(t, append(args, "--db", path)...)
		entries, _ := os.ReadDir(filepath.Dir(path))
		for _, e := range entries {
			if strings.Contains(e.Name(), "lock") {
				t.Errorf("%v left %s", args, e.Name())
			}
		}
	}
}

// `migrate status` reports the rows recorded in agno_migration_errors.
func TestMigrate_StatusReportsRecordedBadRows(t *testing.T) {
	t.Parallel()
	path := legacyRollbackSQLite(t, migratetest.Canonical())
	_, wantBad := migratetest.Expected(migratetest.Canonical())
	if code, _, errOut := cli(t, "migrate", "up", "--db", path); code != 2 {
		t.Fatalf("up: code %d err %s", code, errOut)
	}
	want := strconv.Itoa(len(wantBad)) + " bad rows recorded in agno_migration_errors"
	code, out, errOut := cli(t, "migrate", "status", "--db", path)
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("status: code %d out %q err %q, want it to say %q", code, out, errOut, want)
	}
	code, out, _ = cli(t, "migrate", "status", "--db", path, "--json")
	if code != 0 || !strings.Contains(out, `"bad_rows_recorded": `+strconv.Itoa(len(wantBad))) {
		t.Errorf("status --json: code %d out %s", code, out)
	}
}

// A resumed `up` reports the bad rows an interrupted earlier attempt
// recorded, and exits 2 while any remain; once the row is fixed, `up`
// copies it and exits 0.
func TestMigrate_ResumedUpReportsBadRowsOfTheEarlierAttempt(t *testing.T) {
	t.Parallel()
	good := func(id string) migratetest.Session {
		return migratetest.Session{SessionID: id, SessionType: "agent", AgentID: "a1", CreatedAt: 1_700_000_000,
			Runs: []byte(`[{"run_id": "run-` + id + `", "agent_id": "a1", "session_id": "` + id + `", "status": "COMPLETED", "content": "ok"}]`)}
	}
	bad := migratetest.Session{SessionID: "a-bad", SessionType: "agent", AgentID: "a1", CreatedAt: 1_700_000_000, Runs: []byte(`[{"run_id": "run-x", "content": "trunc`)}
	path := legacyRollbackSQLite(t, []migratetest.Session{bad, good("b-ok"), good("c-ok")})

	// The first attempt stops after its first batch (the bad session).
	sqlDB, err := openSQLiteForTest(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m, err := migrate.New(migrate.Config{DB: sqlDB, Dialect: sqlite.Dialect(), BatchSize: 1, Progress: func(migrate.Progress) { cancel() }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, ""); err == nil {
		t.Fatal("the interrupted attempt finished")
	}
	sqlDB.Close()

	code, out, errOut := cli(t, "migrate", "up", "--db", path)
	if code != 2 || !strings.Contains(out, "a-bad") {
		t.Fatalf("resumed up: code %d out %q err %q; want exit 2 naming session a-bad", code, out, errOut)
	}
	if code, out, errOut = cli(t, "migrate", "up", "--db", path); code != 2 || !strings.Contains(out, "a-bad") {
		t.Fatalf("up again: code %d out %q err %q; want exit 2 while the row is bad", code, out, errOut)
	}

	// Fixing the row resolves it.
	sqlDB, err = openSQLiteForTest(path)
	if err != nil {
		t.Fatal(err)
	}
	fixed := migratetest.Encode("sqlite", []byte(`[{"run_id": "run-x", "agent_id": "a1", "session_id": "a-bad", "content": "fixed"}]`))
	if _, err := sqlDB.Exec(`UPDATE agno_sessions SET runs = ? WHERE session_id = 'a-bad'`, fixed); err != nil {
		t.Fatal(err)
	}
	sqlDB.Close()
	if code, out, errOut = cli(t, "migrate", "up", "--db", path); code != 0 {
		t.Fatalf("up after the fix: code %d out %q err %q", code, out, errOut)
	}
	if code, out, errOut = cli(t, "runs", "get", "--db", path, "run-x"); code != 0 || !strings.Contains(out, "fixed") {
		t.Fatalf("the fixed run was not copied: code %d out %q err %q", code, out, errOut)
	}
	if code, out, _ = cli(t, "migrate", "status", "--db", path); code != 0 || strings.Contains(out, "bad rows recorded") {
		t.Errorf("status after the fix still reports bad rows: %q", out)
	}
}

// The summary's words match what happened: a dry run says "would", Down
// counts the sessions whose runs column it rebuilt.
func TestMigrate_CountersSayWhatHappened(t *testing.T) {
	t.Parallel()
	path := legacyRollbackSQLite(t, migratetest.Canonical())
	wantRuns, _ := migratetest.Expected(migratetest.Canonical())
	sessions := map[string]bool{}
	for _, r := range wantRuns {
		sessions[r.SessionID] = true
	}
	_, out, _ := cli(t, "migrate", "up", "--dry-run", "--db", path)
	if !strings.Contains(out, "would copy "+strconv.Itoa(len(wantRuns))+" runs") || strings.Contains(out, "copied") {
		t.Errorf("dry run summary %q: want \"would copy %d runs\" and no \"copied\"", out, len(wantRuns))
	}
	_, out, _ = cli(t, "migrate", "up", "--db", path)
	if !strings.Contains(out, strconv.Itoa(len(wantRuns))+" runs copied") {
		t.Errorf("up summary %q: want %d runs copied", out, len(wantRuns))
	}
	code, out, errOut := cli(t, "migrate", "down", "--to", "2.5.6", "--db", path)
	want := "rebuilt the runs column of " + strconv.Itoa(len(sessions)) + " sessions (" + strconv.Itoa(len(wantRuns)) + " runs)"
	if code != 0 || !strings.Contains(out, want) || strings.Contains(out, "copied") {
		t.Errorf("down: code %d out %q err %q, want it to say %q", code, out, errOut, want)
	}
}

// Down never stamps a version whose shape it did not restore: below 2.5.0
// it refuses before changing anything.
func TestMigrate_DownBelowARestorableVersionRefuses(t *testing.T) {
	t.Parallel()
	path := legacyRollbackSQLite(t, migratetest.Canonical())
	cli(t, "migrate", "up", "--db", path)
	for _, to := range []string{"2.3.0", "2.0.0"} {
		code, _, errOut := cli(t, "migrate", "down", "--to", to, "--db", path)
		if code == 0 || !strings.Contains(errOut, "cannot restore") {
			t.Errorf("down --to %s: code %d err %q, want a refusal", to, code, errOut)
		}
		if _, out, _ := cli(t, "migrate", "status", "--db", path); !sessionsAt30.MatchString(out) {
			t.Errorf("down --to %s changed the versions:\n%s", to, out)
		}
	}
}

// serve binds its port before it touches the database: a port in use
// leaves no database file and no data directory behind.
func TestServe_PortInUseLeavesNoDatabase(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	dir := t.TempDir()
	path, data := filepath.Join(dir, "new.db"), filepath.Join(dir, "data")
	code, _, errOut := cli(t, "serve", "--port", port, "--db", path, "--data-dir", data)
	if code == 0 || !strings.Contains(errOut, "address already in use") {
		t.Fatalf("code %d stderr %q, want the bind error", code, errOut)
	}
	for _, p := range []string{path, data} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s was created by a serve that could not bind", p)
		}
	}
}

func openSQLiteForTest(path string) (*sql.DB, error) {
	return sql.Open("sqlite", migratetest.SQLiteDSN(path))
}
