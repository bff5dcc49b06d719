package testdbs

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/db/sqlite"
)

// Opener opens a fresh database and registers its cleanup.
type Opener func(t testing.TB) *db.DB

// All names an opener per SQL driver.
var All = map[string]Opener{"sqlite": SQLite, "postgres": Postgres, "mysql": MySQL}

// Each runs fn, in parallel subtests, once per driver with a fresh database.
func Each(t *testing.T, fn func(t *testing.T, d *db.DB)) {
	t.Helper()
	for name, open := range All {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, open(t))
		})
	}
}

func randomName() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "agentry_test_" + hex.EncodeToString(b)
}

// SQLite opens a database file in a temp dir.
func SQLite(t testing.TB) *db.DB {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// Postgres opens a fresh schema on AGENTRY_TEST_POSTGRES_DSN (default the
// loopback server's `test` database).
func Postgres(t testing.TB) *db.DB {
	t.Helper()
	dsn := os.Getenv("AGENTRY_TEST_POSTGRES_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	schema := randomName()
	d, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, Schema: schema, MaxOpenConns: 8})
	if err != nil {
		t.Fatalf("postgres test server unavailable: %v\nstart it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start", err)
	}
	t.Cleanup(func() {
		defer d.Close()
		target, err := d.Driver().(db.SQLBacked).SQLTarget()
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer target.Release()
		if _, err := target.DB.ExecContext(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return d
}

// MySQL opens a fresh database on AGENTRY_TEST_MYSQL_DSN (default the
// loopback MariaDB as root).
func MySQL(t testing.TB) *db.DB {
	t.Helper()
	server := os.Getenv("AGENTRY_TEST_MYSQL_DSN")
	if server == "" {
		server = "root@tcp(127.0.0.1:3306)/test"
	}
	const hint = "start it with: start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd"
	mc, err := mysql.ParseDSN(server)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	name := randomName()
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("mysql test server unavailable: %v\n%s", err, hint)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	mc.DBName = name
	d, err := mysql.Open(context.Background(), mysql.Config{DSN: mc.FormatDSN(), MaxOpenConns: 8})
	if err != nil {
		t.Fatalf("open %s: %v\n%s", name, err, hint)
	}
	t.Cleanup(func() { d.Close() })
	return d
}
