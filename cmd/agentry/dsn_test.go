package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentryhq/agentry/agentos/config"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/migrate/migratetest"
	"github.com/agentryhq/agentry/run"
)

var sessionsAt30 = regexp.MustCompile(`agno_sessions\s+3\.0\.0`)

// mysqlWithRun creates a MariaDB database with Agentry's tables and one stored
// run, and returns its go-sql-driver DSN and parsed form.
func mysqlWithRun(t *testing.T) (string, *gomysql.Config) {
	t.Helper()
	_, native := migratetest.MySQL(t)
	ctx := context.Background()
	store, err := mysql.Open(ctx, mysql.Config{DSN: native})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if _, err := store.UpsertSession(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeAgent, AgentID: "a1"}); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"run_id": "run-1", "session_id": "s1", "agent_id": "a1", "status": "COMPLETED", "content": "hi"})
	if _, err := store.UpsertRun(ctx, &db.Run{RunID: "run-1", SessionID: "s1", RunType: run.TypeAgent, AgentID: "a1",
		Status: run.StatusCompleted, RunData: data}); err != nil {
		t.Fatal(err)
	}
	cfg, err := gomysql.ParseDSN(native)
	if err != nil {
		t.Fatal(err)
	}
	return native, cfg
}

// Every command reads a DSN the same way: the go-sql-driver form, mysql://
// and mariadb:// all name the same MariaDB database for `runs` and for
// `migrate` (before, the first was a SQLite path to `runs` and the last a
// SQLite file to `migrate`).
func TestDSN_EveryFormNamesTheSameDatabaseForEveryCommand(t *testing.T) {
	t.Parallel()
	native, cfg := mysqlWithRun(t)
	forms := map[string]string{
		"go-sql-driver": native,
		"mysql://":      "mysql://" + cfg.User + "@" + cfg.Addr + "/" + cfg.DBName,
		"mariadb://":    "mariadb://" + cfg.User + "@" + cfg.Addr + "/" + cfg.DBName,
	}
	for name, dsn := range forms {
		t.Run(name, func(t *testing.T) {
			code, out, errOut := cli(t, "runs", "list", "--db", dsn, "--session", "s1", "--limit", "5", "--json")
			if code != 0 || !strings.Contains(out, `"run-1"`) {
				t.Errorf("runs list --db %s: code %d out %q err %q", dsn, code, out, errOut)
			}
			code, out, errOut = cli(t, "migrate", "status", "--db", dsn)
			if code != 0 || !sessionsAt30.MatchString(out) || strings.Contains(out, "(missing)") {
				t.Errorf("migrate status --db %s: code %d out %q err %q", dsn, code, out, errOut)
			}
		})
	}
}

// Parameters of a mysql:// URL reach the driver in every command: an unknown
// TLS configuration is refused (migrate used to drop the parameters).
func TestDSN_MySQLURLParametersReachTheDriver(t *testing.T) {
	t.Parallel()
	_, cfg := mysqlWithRun(t)
	dsn := "mysql://" + cfg.User + "@" + cfg.Addr + "/" + cfg.DBName + "?tls=no-such-config"
	for _, args := range [][]string{
		{"runs", "list", "--limit", "5"},
		{"migrate", "status"},
	} {
		code, out, errOut := cli(t, append(args, "--db", dsn)...)
		if code == 0 || !strings.Contains(errOut, "unknown config name: no-such-config") {
			t.Errorf("%v --db %s: code %d out %q err %q; want the tls parameter refused", args, dsn, code, out, errOut)
		}
	}
}

// An incomplete DSN is refused by every command with what it lacks, before
// anything connects (`postgres://` alone used to open libpq's default
// database and create the 9-table schema in it).
func TestDSN_IncompleteDSNsAreRefusedByEveryCommand(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"postgres://":                    "names no host",
		"postgresql://127.0.0.1:5432":    "names no database",
		"postgres://postgres@127.0.0.1/": "names no database",
		"mysql://":                       "names no host",
		"mariadb://root@127.0.0.1:3306":  "names no database",
		"root@tcp(127.0.0.1:3306)/":      "names no database",
		"sqlite://":                      "names no file",
		"redis://127.0.0.1:6379":         "unsupported",
	}
	for dsn, want := range tests {
		t.Run(dsn, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for _, args := range [][]string{
				{"runs", "list", "--limit", "5"},
				{"migrate", "status"},
				{"migrate", "up", "--dry-run"},
				{"serve", "--port", "0", "--data-dir", filepath.Join(dir, "data")},
			} {
				code, _, errOut := cli(t, append(args, "--db", dsn)...)
				if code == 0 || !strings.Contains(errOut, want) {
					t.Errorf("%v --db %s: code %d stderr %q, want it to say %q", args, dsn, code, errOut, want)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "data")); !os.IsNotExist(err) {
				t.Errorf("a refused serve created its data directory")
			}
		})
	}
}

// A read command never creates tables on a server: `runs list` against an
// empty Postgres database or MariaDB database is an error and leaves it
// empty (it used to create Agentry's nine tables).
func TestDSN_ReadCommandsCreateNoTablesOnServers(t *testing.T) {
	t.Parallel()
	pgAdmin, _, pgDSN := migratetest.Postgres(t)
	name := migratetest.RandomName("agentry_ro_")
	if _, err := pgAdmin.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = pgAdmin.Exec(`DROP DATABASE ` + name + ` WITH (FORCE)`) })
	u, err := url.Parse(pgDSN)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	emptyPG := u.String()
	pgConn, err := sql.Open("pgx", emptyPG)
	if err != nil {
		t.Fatal(err)
	}
	defer pgConn.Close()

	myConn, emptyMy := migratetest.MySQL(t)

	for _, tc := range []struct {
		name  string
		dsn   string
		conn  *sql.DB
		count string
	}{
		{"postgres", emptyPG, pgConn, `SELECT (SELECT count(*) FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema'))
			+ (SELECT count(*) FROM information_schema.schemata WHERE schema_name = 'ai')`},
		{"mariadb", emptyMy, myConn, `SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE()`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, args := range [][]string{
				{"runs", "list", "--limit", "5"},
				{"runs", "get", "run-1"},
				{"migrate", "status"},
				{"migrate", "up", "--dry-run"},
			} {
				code, out, errOut := cli(t, append(args, "--db", tc.dsn)...)
				var n int
				if err := tc.conn.QueryRow(tc.count).Scan(&n); err != nil {
					t.Fatal(err)
				}
				if n != 0 {
					t.Fatalf("%v created %d tables or schemas (code %d out %q err %q)", args, n, code, out, errOut)
				}
				if args[0] == "runs" && (code == 0 || !strings.Contains(errOut, "no Agentry tables")) {
					t.Errorf("%v on an empty database: code %d stderr %q, want an error saying it has no tables", args, code, errOut)
				}
			}
		})
	}
}

// The config file's db.query_timeout is the bound of the database serve
// opens; without it the default (5s).
func TestServe_DBQueryTimeoutReachesTheDatabase(t *testing.T) {
	t.Parallel()
	for yaml, want := range map[string]time.Duration{
		"db:\n  query_timeout: 1234ms\n": 1234 * time.Millisecond,
		"db:\n  id: main\n":              db.DefaultQueryTimeout,
	} {
		file, err := config.Parse([]byte(yaml), "os.yaml")
		if err != nil {
			t.Fatal(err)
		}
		store, err := openStore(context.Background(), filepath.Join(t.TempDir(), "a.db"), storeOptions(file))
		if err != nil {
			t.Fatal(err)
		}
		if got := store.QueryTimeout(); got != want {
			t.Errorf("%q: the database's query timeout is %s, want %s", yaml, got, want)
		}
		store.Close()
	}
}

// The config file's db.sqlite_exclusive reaches the SQLite file serve opens:
// an exclusive open keeps its WAL index in memory (no -shm file beside the
// database), a default one shares the file through its -shm.
func TestServe_SQLiteExclusiveReachesTheDatabase(t *testing.T) {
	t.Parallel()
	for yaml, exclusive := range map[string]bool{
		"db:\n  sqlite_exclusive: true\n":  true,
		"db:\n  sqlite_exclusive: false\n": false,
	} {
		file, err := config.Parse([]byte(yaml), "os.yaml")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "a.db")
		store, err := openStore(context.Background(), path, storeOptions(file))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.UpsertSession(context.Background(), &db.Session{SessionID: "s", SessionType: run.TypeAgent, AgentID: "a"}); err != nil {
			t.Fatal(err)
		}
		_, err = os.Stat(path + "-shm")
		if shm := err == nil; shm == exclusive {
			t.Errorf("%q: -shm file beside the open database: %v (exclusive opens keep none)", yaml, shm)
		}
		store.Close()
	}
}

// The server drivers refuse SQLiteExclusive instead of ignoring it.
func TestOpenStore_SQLiteExclusiveRefusedByServerDrivers(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"postgres://u:secret@127.0.0.1:1/d", "mysql://u:secret@127.0.0.1:1/d"} {
		store, err := openStore(context.Background(), s, dsn.Options{SQLiteExclusive: true})
		if err == nil {
			store.Close()
			t.Fatalf("%s: opened with SQLiteExclusive", s)
		}
		if !strings.Contains(err.Error(), "SQLiteExclusive") || strings.Contains(err.Error(), "secret") {
			t.Errorf("%s: %v; want an error naming SQLiteExclusive, without the password", s, err)
		}
	}
}
