package dsn_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

var all = dsn.Drivers{SQLite: sqlite.OpenDSN, Postgres: postgres.OpenDSN, MySQL: mysql.OpenDSN}

// A program opens only the dialects whose driver it passes.
func TestOpen_RefusesADialectTheProgramDoesNotLink(t *testing.T) {
	t.Parallel()
	onlySQLite := dsn.Drivers{SQLite: sqlite.OpenDSN}
	for _, s := range []string{"postgres://u@127.0.0.1/db", "mysql://u@127.0.0.1/db"} {
		_, err := dsn.Open(context.Background(), s, onlySQLite, dsn.Options{})
		if !errors.Is(err, dsn.ErrNotLinked) || !strings.Contains(err.Error(), "OpenDSN") {
			t.Errorf("Open(%q) = %v, want ErrNotLinked saying what to pass", s, err)
		}
	}
	d, err := dsn.Open(context.Background(), filepath.Join(t.TempDir(), "a.db"), onlySQLite, dsn.Options{ID: "main"})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.ID != "main" || d.Driver().Dialect() != dsn.SQLite {
		t.Errorf("opened %s as %s", d.ID, d.Driver().Dialect())
	}
}

// Each package links the storage drivers it imports and no other: the server
// and the migrations link none (a program chooses), each driver only its own.
// A storage driver is Agentry's package (db/sqlite, …) and, below it, its
// database/sql client; the server and its config link the sql toolkit
// (tool/sqltools), which brings the clients but no storage driver, so for
// them only the storage packages are checked.
func TestPackages_LinkOnlyTheDriversTheyImport(t *testing.T) {
	t.Parallel()
	clients := map[string]string{
		"sqlite":   "modernc.org/sqlite",
		"postgres": "github.com/jackc/pgx/v5/stdlib",
		"mysql":    "github.com/go-sql-driver/mysql",
	}
	stores := map[string]string{
		"sqlite":   "github.com/agentryhq/agentry/db/sqlite",
		"postgres": "github.com/agentryhq/agentry/db/postgres",
		"mysql":    "github.com/agentryhq/agentry/db/mysql",
	}
	tests := []struct {
		pkg     string
		want    []string
		clients bool // also check the database/sql clients
	}{
		{"github.com/agentryhq/agentry/db/dsn", nil, true},
		{"github.com/agentryhq/agentry/migrate", nil, true},
		{"github.com/agentryhq/agentry/agentos", nil, false},
		{"github.com/agentryhq/agentry/agentos/config", nil, false},
		{"github.com/agentryhq/agentry/db/sqlite", []string{"sqlite"}, true},
		{"github.com/agentryhq/agentry/db/postgres", []string{"postgres"}, true},
		{"github.com/agentryhq/agentry/db/mysql", []string{"mysql"}, true},
		{"github.com/agentryhq/agentry/cmd/agentry", []string{"mysql", "postgres", "sqlite"}, true},
	}
	// go test puts its own GOROOT/bin first in PATH.
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command: %v", err)
	}
	for _, tt := range tests {
		out, err := exec.Command(goTool, "list", "-deps", tt.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", tt.pkg, err)
		}
		deps := strings.Fields(string(out))
		linked := func(by map[string]string) []string {
			var got []string
			for name, dep := range by {
				if slices.Contains(deps, dep) {
					got = append(got, name)
				}
			}
			slices.Sort(got)
			return got
		}
		if got := linked(stores); !slices.Equal(got, tt.want) {
			t.Errorf("%s links storage drivers %v, want %v", tt.pkg, got, tt.want)
		}
		if got := linked(clients); tt.clients && !slices.Equal(got, tt.want) {
			t.Errorf("%s links database clients %v, want %v", tt.pkg, got, tt.want)
		}
	}
	// The server migrates through the db front, not the SQL store's internals.
	out, err := exec.Command(goTool, "list", "-f", "{{join .Imports \" \"}}", "github.com/agentryhq/agentry/agentos").Output()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(strings.Fields(string(out)), "github.com/agentryhq/agentry/internal/sqlstore") {
		t.Error("agentos imports internal/sqlstore")
	}
}

func TestOpen_UnreachableServerFailsWithinSecondsWithoutThePassword(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"postgres://postgres:hunter2@10.255.255.1:5432/test?sslmode=disable&connect_timeout=2",
		"postgres://postgres:hunter2@127.0.0.1:1/test?sslmode=disable",
		"mysql://root:hunter2@127.0.0.1:1/test",
		"root:hunter2@tcp(127.0.0.1:1)/test",
	} {
		t.Run(s, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := dsn.Open(context.Background(), s, all, dsn.Options{})
			if err == nil || !strings.Contains(err.Error(), "cannot connect") || strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("Open = %v, want a cannot-connect error without the password", err)
			}
			if d := time.Since(start); d > 13*time.Second {
				t.Errorf("Open took %s", d)
			}
		})
	}
}

// A read-only Postgres store is read-only on the server too: a write
// through its pool is refused.
func TestOpen_ReadOnlyPostgresRefusesWrites(t *testing.T) {
	t.Parallel()
	_, schema, url := migratetest.Postgres(t)
	d, err := dsn.Open(context.Background(), url, all, dsn.Options{ReadOnly: true, SkipSchemaCheck: true, Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	target, err := d.Driver().(db.SQLBacked).SQLTarget()
	if err != nil {
		t.Fatal(err)
	}
	defer target.Release()
	if !target.ReadOnly {
		t.Error("the target does not say it is read-only")
	}
	_, err = target.DB.Exec(`CREATE TABLE "` + schema + `".x (id int)`)
	if err == nil || !strings.Contains(err.Error(), "read-only transaction") {
		t.Errorf("CREATE TABLE on a read-only store = %v, want the server to refuse", err)
	}
}

// TestOpen_QueryTimeoutReachesTheDatabase: Options.QueryTimeout (a config
// file's db.query_timeout) is the bound of the opened database, for every
// dialect; zero is db.DefaultQueryTimeout.
func TestOpen_QueryTimeoutReachesTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, schema, pgURL := migratetest.Postgres(t)
	for _, s := range []string{
		filepath.Join(t.TempDir(), "t.db"),
		pgURL,
		"mysql://root@127.0.0.1:3306/test",
	} {
		for _, tt := range []struct{ in, want time.Duration }{
			{1234 * time.Millisecond, 1234 * time.Millisecond},
			{0, db.DefaultQueryTimeout},
		} {
			d, err := dsn.Open(ctx, s, all, dsn.Options{QueryTimeout: tt.in, SkipSchemaCheck: true, Schema: schema})
			if err != nil {
				t.Fatalf("%s: %v (is the loopback service running?)", s, err)
			}
			if got := d.QueryTimeout(); got != tt.want {
				t.Errorf("%s: Options.QueryTimeout %s: QueryTimeout() = %s, want %s", s, tt.in, got, tt.want)
			}
			d.Close()
		}
	}
}
