package dbopen

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestDialect_PicksTheDriverFromTheDSN(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"./agentry.db":                  "sqlite",
		"/tmp/x.db":                     "sqlite",
		"sqlite:///tmp/x.db":            "sqlite",
		"file:///tmp/x.db":              "sqlite",
		"postgres://u:p@127.0.0.1/test": "postgres",
		"postgresql://u@127.0.0.1/test": "postgres",
		"mysql://root@127.0.0.1/test":   "mysql",
		"mariadb://root@127.0.0.1/test": "mysql",
	}
	for dsn, want := range tests {
		if got, err := Dialect(dsn); err != nil || got != want {
			t.Errorf("Dialect(%q) = %q, %v; want %q", dsn, got, err, want)
		}
	}
	for _, dsn := range []string{"", "   ", "redis://127.0.0.1:6379", "mongodb://x"} {
		if _, err := Dialect(dsn); !errors.Is(err, ErrUnsupported) {
			t.Errorf("Dialect(%q) err = %v, want ErrUnsupported", dsn, err)
		}
	}
}

func TestOpen_SQLitePathAndScheme(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	for _, dsn := range []string{filepath.Join(dir, "a.db"), "sqlite://" + filepath.Join(dir, "b.db")} {
		d, err := Open(ctx, dsn, Options{ID: "main"})
		if err != nil {
			t.Fatalf("Open(%q): %v", dsn, err)
		}
		if d.ID != "main" || d.Driver().Dialect() != "sqlite" {
			t.Errorf("Open(%q) = id %q dialect %q", dsn, d.ID, d.Driver().Dialect())
		}
		d.Close()
	}
}

func TestOpen_UnreachableServerNamesNoPassword(t *testing.T) {
	t.Parallel()
	for _, dsn := range []string{"postgres://u:hunter2@127.0.0.1:1/x?connect_timeout=2", "mysql://u:hunter2@127.0.0.1:1/x"} {
		_, err := Open(context.Background(), dsn, Options{})
		if err == nil {
			t.Fatalf("Open(%q) succeeded against a closed port", dsn)
		}
		if s := err.Error(); len(s) == 0 || contains(s, "hunter2") {
			t.Errorf("Open(%q) error %q leaks the password", dsn, s)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestOpen_QueryTimeoutReachesTheDatabase: Options.QueryTimeout (the YAML
// db.query_timeout) is the bound of the opened database, for every dialect.
func TestOpen_QueryTimeoutReachesTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, dsn := range []string{
		filepath.Join(t.TempDir(), "t.db"),
		"postgres://postgres@127.0.0.1:5432/test?sslmode=disable",
		"mysql://root@127.0.0.1:3306/test",
	} {
		d, err := Open(ctx, dsn, Options{QueryTimeout: 1234 * time.Millisecond, SkipSchemaCheck: true})
		if err != nil {
			t.Fatalf("%s: %v (is the loopback service running?)", dsn, err)
		}
		if got := d.QueryTimeout(); got != 1234*time.Millisecond {
			t.Errorf("%s: QueryTimeout() = %s, want 1.234s", dsn, got)
		}
		d.Close()
	}
}
