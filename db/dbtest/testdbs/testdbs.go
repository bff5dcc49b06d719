package testdbs

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/db/sqlite"
)

// Opener opens a fresh database and registers its cleanup.
type Opener func(t testing.TB) *db.DB

// All names an opener per driver: the SQL ones and memory.
var All = map[string]Opener{"sqlite": SQLite, "postgres": Postgres, "mysql": MySQL, "memory": Memory}

// Twins opens two handles, each with its own connection pool, on one fresh
// database, as two processes sharing it would (memory: one driver, two
// fronts, since it lives in one process).
type Twins func(t testing.TB) (*db.DB, *db.DB)

// AllTwins names a Twins per driver.
var AllTwins = map[string]Twins{
	"sqlite": func(t testing.TB) (*db.DB, *db.DB) {
		path := filepath.Join(t.TempDir(), "agentry.db")
		return openSQLite(t, path), openSQLite(t, path)
	},
	"postgres": func(t testing.TB) (*db.DB, *db.DB) {
		a, schema := postgresSchema(t, postgres.Config{})
		return a, openPostgres(t, schema, postgres.Config{})
	},
	"mysql": func(t testing.TB) (*db.DB, *db.DB) {
		a, dsn := mysqlDatabase(t)
		return a, openMySQL(t, dsn)
	},
	"memory": func(testing.TB) (*db.DB, *db.DB) {
		d := memory.New()
		return db.New("a", d), db.New("b", d)
	},
}

// EachTwins runs fn, in parallel subtests, once per driver with two
// handles on one fresh database.
func EachTwins(t *testing.T, fn func(t *testing.T, a, b *db.DB)) {
	t.Helper()
	for name, open := range AllTwins {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			a, b := open(t)
			fn(t, a, b)
		})
	}
}

// Memory opens an in-memory database.
func Memory(testing.TB) *db.DB { return db.New("memory", memory.New()) }

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
	return openSQLite(t, filepath.Join(t.TempDir(), "agentry.db"))
}

// QueryTimeout is the query bound of the databases this package opens: a
// minute, not db.DefaultQueryTimeout's 5 s, because a test under `go test
// -race ./...` on a loaded two-core machine can wait seconds for the CPU and
// is not about the bound. Tests of the bound set their own.
const QueryTimeout = time.Minute

func openSQLite(t testing.TB, path string) *db.DB {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, QueryTimeout: QueryTimeout})
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
	d, _ := postgresSchema(t, postgres.Config{})
	return d
}

// PostgresConfig is Postgres with cfg's settings (SynchronousCommit, pool
// sizes); its DSN and Schema are the test server's and a fresh schema.
func PostgresConfig(t testing.TB, cfg postgres.Config) *db.DB {
	t.Helper()
	d, _ := postgresSchema(t, cfg)
	return d
}

func openPostgres(t testing.TB, schema string, cfg postgres.Config) *db.DB {
	t.Helper()
	dsn := os.Getenv("AGENTRY_TEST_POSTGRES_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	cfg.DSN, cfg.Schema = dsn, schema
	if cfg.MaxOpenConns == 0 {
		cfg.MaxOpenConns = 8
	}
	if cfg.QueryTimeout == 0 {
		cfg.QueryTimeout = QueryTimeout
	}
	d, err := postgres.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("postgres test server unavailable: %v\nstart it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func postgresSchema(t testing.TB, cfg postgres.Config) (*db.DB, string) {
	t.Helper()
	schema := randomName()
	d := openPostgres(t, schema, cfg)
	t.Cleanup(func() {
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
	return d, schema
}

// MySQL opens a fresh database on AGENTRY_TEST_MYSQL_DSN (default the
// loopback MariaDB as root).
func MySQL(t testing.TB) *db.DB {
	t.Helper()
	d, _ := mysqlDatabase(t)
	return d
}

const mysqlHint = "start it with: start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd"

func openMySQL(t testing.TB, dsn string) *db.DB {
	t.Helper()
	d, err := mysql.Open(context.Background(), mysql.Config{DSN: dsn, MaxOpenConns: 8, QueryTimeout: QueryTimeout})
	if err != nil {
		t.Fatalf("open %s: %v\n%s", dsn, err, mysqlHint)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func mysqlDatabase(t testing.TB) (*db.DB, string) {
	t.Helper()
	dsn := MySQLDatabaseDSN(t)
	return openMySQL(t, dsn), dsn
}

// MySQLDatabaseDSN creates a fresh database (utf8mb4_bin, dropped when the
// test ends) on AGENTRY_TEST_MYSQL_DSN's server and returns its DSN, for a
// test that opens it its own way (a query timeout, a proxy).
func MySQLDatabaseDSN(t testing.TB) string {
	t.Helper()
	server := os.Getenv("AGENTRY_TEST_MYSQL_DSN")
	if server == "" {
		server = "root@tcp(127.0.0.1:3306)/test"
	}
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
		t.Fatalf("mysql test server unavailable: %v\n%s", err, mysqlHint)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	mc.DBName = name
	return mc.FormatDSN()
}
