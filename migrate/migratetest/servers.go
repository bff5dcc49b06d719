package migratetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib" // registers "pgx"
	_ "modernc.org/sqlite"             // registers "sqlite"
)

// Default test servers (the ones .ci/run starts); the environment overrides them.
const (
	DefaultPostgresDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable&connect_timeout=5"
	DefaultMySQLDSN    = "root@tcp(127.0.0.1:3306)/test?timeout=5s"
)

// RandomName returns prefix followed by 8 random hex digits.
func RandomName(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// SQLiteDSN is the DSN the tests use for a SQLite file: WAL, foreign keys on,
// a busy timeout so concurrent processes wait instead of failing.
func SQLiteDSN(path string) string {
	return "file:" + path + "?_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)"
}

// SQLite returns a database in a new file under t.TempDir() and its path.
func SQLite(t testing.TB) (*sql.DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agno.db")
	db, err := sql.Open("sqlite", SQLiteDSN(path))
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db, path
}

// Postgres creates a schema agentry_mig_<random> on the test server (or
// $AGENTRY_TEST_POSTGRES_DSN), drops it when the test ends, and returns the
// database, the schema and the DSN. An unreachable server fails the test.
func Postgres(t testing.TB) (*sql.DB, string, string) {
	t.Helper()
	dsn := os.Getenv("AGENTRY_TEST_POSTGRES_DSN")
	if dsn == "" {
		dsn = DefaultPostgresDSN
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("open postgres %s: %v", dsn, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("postgres at %s is unreachable (start it: .ci/run starts PostgreSQL and MariaDB; or set AGENTRY_TEST_POSTGRES_DSN): %v", dsn, err)
	}
	schema := RandomName("agentry_mig_")
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA "`+schema+`"`); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		_, _ = db.Exec(`DROP SCHEMA "` + schema + `" CASCADE`)
		db.Close()
	})
	return db, schema, dsn
}

// MySQL creates a database agentry_mig_<random> on the test server (or
// $AGENTRY_TEST_MYSQL_DSN, go-sql-driver format), drops it when the test
// ends, and returns a handle on it and its DSN. An unreachable server fails
// the test.
func MySQL(t testing.TB) (*sql.DB, string) {
	t.Helper()
	dsn := os.Getenv("AGENTRY_TEST_MYSQL_DSN")
	if dsn == "" {
		dsn = DefaultMySQLDSN
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatalf("parse mysql dsn %s: %v", dsn, err)
	}
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("open mysql: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		t.Fatalf("mysql at %s is unreachable (start it: .ci/run starts PostgreSQL and MariaDB; or set AGENTRY_TEST_MYSQL_DSN): %v", cfg.Addr, err)
	}
	name := RandomName("agentry_mig_")
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		t.Fatalf("create database: %v", err)
	}
	cfg.DBName = name
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.MaxAllowedPacket = 0 // use the server's
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("open mysql %s: %v", name, err)
	}
	t.Cleanup(func() {
		db.Close()
		_, _ = admin.Exec("DROP DATABASE `" + name + "`")
		admin.Close()
	})
	return db, cfg.FormatDSN()
}
