package dsn_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dsn"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/db/sqlite"
)

// Every driver's refusal of its configuration is db.ErrInvalidConfig to
// errors.Is, keeps its message, and is refused before any server is
// dialled or file created: a caller (the CLI, a server's start) can tell
// a configuration to fix from a database that failed.
func TestOpen_ConfigRefusalsAreErrInvalidConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	pg, err := dsn.Parse("postgres://127.0.0.1:1/test")
	if err != nil {
		t.Fatal(err)
	}
	lite, err := dsn.Parse("sqlite:///" + filepath.Join(dir, "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, want string
		open       func() (*db.DB, error)
	}{
		{"sqlite without a path", "Config.Path is required", func() (*db.DB, error) { return sqlite.Open(ctx, sqlite.Config{}) }},
		{"sqlite exclusive and read-only", "cannot be combined with ReadOnly",
			func() (*db.DB, error) {
				return sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "ro.db"), Exclusive: true, ReadOnly: true})
			}},
		{"sqlite exclusive in memory", ":memory:", func() (*db.DB, error) { return sqlite.Open(ctx, sqlite.Config{Path: ":memory:", Exclusive: true}) }},
		{"sqlite dotted table", "holds a dot",
			func() (*db.DB, error) {
				return sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "t.db"), Tables: sqlite.Tables{Runs: "x.runs"}})
			}},
		{"sqlite given a postgres DSN", "cannot open a", func() (*db.DB, error) { return sqlite.OpenDSN(ctx, pg, dsn.Options{}) }},
		{"postgres without a DSN", "Config.DSN is required", func() (*db.DB, error) { return postgres.Open(ctx, postgres.Config{}) }},
		{"postgres bad DSN", "invalid DSN", func() (*db.DB, error) { return postgres.Open(ctx, postgres.Config{DSN: "postgres://%zz"}) }},
		{"postgres bad synchronous_commit", "SynchronousCommit", func() (*db.DB, error) {
			return postgres.Open(ctx, postgres.Config{DSN: "postgres://127.0.0.1:1/test", SynchronousCommit: "sometimes"})
		}},
		{"postgres tables equal but for case", "differ only in case", func() (*db.DB, error) {
			return postgres.Open(ctx, postgres.Config{DSN: "postgres://127.0.0.1:1/test", Tables: postgres.Tables{Sessions: "S", Runs: "s"}})
		}},
		{"postgres given a sqlite DSN", "cannot open a", func() (*db.DB, error) { return postgres.OpenDSN(ctx, lite, dsn.Options{}) }},
		{"postgres asked for SQLite's exclusive lock", "SQLiteExclusive", func() (*db.DB, error) {
			return postgres.OpenDSN(ctx, pg, dsn.Options{SQLiteExclusive: true})
		}},
		{"mysql without a DSN", "Config.DSN is required", func() (*db.DB, error) { return mysql.Open(ctx, mysql.Config{}) }},
		{"mysql without a database", "names no database", func() (*db.DB, error) { return mysql.Open(ctx, mysql.Config{DSN: "root@tcp(127.0.0.1:1)/"}) }},
		{"mysql bad DSN", "invalid database DSN", func() (*db.DB, error) { return mysql.Open(ctx, mysql.Config{DSN: "root@tcp(127.0.0.1:1"}) }},
		{"mysql given a sqlite DSN", "cannot open a", func() (*db.DB, error) { return mysql.OpenDSN(ctx, lite, dsn.Options{}) }},
	}
	for _, c := range cases {
		d, err := c.open()
		if err == nil {
			d.Close()
			t.Fatalf("%s: opened; want a refusal", c.name)
		}
		if !errors.Is(err, db.ErrInvalidConfig) || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v; want db.ErrInvalidConfig saying %q", c.name, err, c.want)
		}
		if strings.Contains(err.Error(), db.ErrInvalidConfig.Error()) {
			t.Fatalf("%s: %q repeats the sentinel's text; the message is the driver's own", c.name, err)
		}
	}
	// Nothing was created by the refused opens.
	if m, err := filepath.Glob(filepath.Join(dir, "*")); err != nil || len(m) > 0 {
		t.Fatalf("the refused opens created %v (%v)", m, err)
	}
}

// ConfigError wraps its %w arguments as fmt.Errorf does.
func TestConfigError_UnwrapsItsCause(t *testing.T) {
	t.Parallel()
	cause := errors.New("cause")
	err := db.ConfigError("x: %w", cause)
	if !errors.Is(err, cause) || !errors.Is(err, db.ErrInvalidConfig) || err.Error() != "x: cause" {
		t.Fatalf("ConfigError = %q (is cause %v, is ErrInvalidConfig %v)", err, errors.Is(err, cause), errors.Is(err, db.ErrInvalidConfig))
	}
}
