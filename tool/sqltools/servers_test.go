package sqltools

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/agentryhq/agentry/migrate/migratetest"
)

// fixture is a database of one dialect holding notes (writable in the write
// tests), secrets (never writable) and big (many and large rows).
type fixture struct {
	dialect string
	dsn     string
	exec    func(t *testing.T, sql string) // runs setup SQL with full rights
	count   func(t *testing.T, sql string) int
}

var fixtureSQL = []string{
	`CREATE TABLE notes (id INTEGER PRIMARY KEY, body VARCHAR(200) NOT NULL DEFAULT 'empty')`,
	`CREATE TABLE secrets (id INTEGER PRIMARY KEY, token VARCHAR(200))`,
	`CREATE TABLE big (id INTEGER PRIMARY KEY, payload TEXT)`,
	`INSERT INTO notes (id, body) VALUES (1, 'first'), (2, 'second')`,
	`INSERT INTO secrets (id, token) VALUES (1, 's3cr3t')`,
}

func fill(t *testing.T, f fixture) fixture {
	t.Helper()
	for _, s := range fixtureSQL {
		f.exec(t, s)
	}
	var b strings.Builder
	b.WriteString("INSERT INTO big (id, payload) VALUES ")
	for i := range 500 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "(%d, 'row %d')", i, i)
	}
	f.exec(t, b.String())
	f.exec(t, "INSERT INTO big (id, payload) VALUES (1000, '"+strings.Repeat("x", 60_000)+"')")
	return f
}

func sqliteFixture(t *testing.T) fixture {
	t.Helper()
	db, path := migratetest.SQLite(t)
	f := fixture{dialect: SQLite, dsn: path}
	f.exec = func(t *testing.T, s string) {
		t.Helper()
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("setup %.200q: %v", s, err)
		}
	}
	f.count = func(t *testing.T, s string) int { return countRows(t, db, s) }
	return fill(t, f)
}

func postgresFixture(t *testing.T) fixture {
	t.Helper()
	admin := os.Getenv("AGENTRY_TEST_POSTGRES_DSN")
	if admin == "" {
		admin = migratetest.DefaultPostgresDSN
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("postgres at %s is unreachable (start it: see SERVICES.md, or set AGENTRY_TEST_POSTGRES_DSN): %v", admin, err)
	}
	name := migratetest.RandomName("agentry_sqltools_")
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
		conn.Close(context.Background())
	})
	cfg, _ := pgx.ParseConfig(admin)
	dsn := fmt.Sprintf("postgres://%s@%s:%d/%s?sslmode=disable&connect_timeout=5", cfg.User, cfg.Host, cfg.Port, name)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := fixture{dialect: Postgres, dsn: dsn}
	f.exec = func(t *testing.T, s string) {
		t.Helper()
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("setup %.200q: %v", s, err)
		}
	}
	f.count = func(t *testing.T, s string) int { return countRows(t, db, s) }
	return fill(t, f)
}

func mysqlFixture(t *testing.T) fixture {
	t.Helper()
	db, dsn := migratetest.MySQL(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{dialect: MySQL, dsn: cfg.FormatDSN()}
	f.exec = func(t *testing.T, s string) {
		t.Helper()
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("setup %.200q: %v", s, err)
		}
	}
	f.count = func(t *testing.T, s string) int { return countRows(t, db, s) }
	return fill(t, f)
}

func countRows(t *testing.T, db *sql.DB, s string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(s).Scan(&n); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return n
}

// fixtures runs fn once per dialect, each on its own fresh database.
func fixtures(t *testing.T, fn func(t *testing.T, f fixture)) {
	eachFixture(t, fn, SQLite, Postgres, MySQL)
}

// serverFixtures is fixtures for the database servers alone (Postgres and
// MySQL): what a test checks has no meaning for an embedded SQLite file.
func serverFixtures(t *testing.T, fn func(t *testing.T, f fixture)) {
	eachFixture(t, fn, Postgres, MySQL)
}

func eachFixture(t *testing.T, fn func(t *testing.T, f fixture), dialects ...string) {
	mk := map[string]func(*testing.T) fixture{SQLite: sqliteFixture, Postgres: postgresFixture, MySQL: mysqlFixture}
	for _, d := range dialects {
		t.Run(d, func(t *testing.T) { fn(t, mk[d](t)) })
	}
}

// tempFile names a file in a new directory the database servers (which run
// as other users) can write to, so that a statement writing a file is stopped
// by the toolkit and not by the file system.
func tempFile(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "agentry-sqltools-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, name)
}
