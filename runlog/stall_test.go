package runlog_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/internal/faultproxy"
	"github.com/agentryhq/agentry/runlog"
)

// proxiedPostgres opens a fresh schema of the test server through a fault
// proxy, with the query timeout bound.
func proxiedPostgres(t *testing.T, bound time.Duration) (*db.DB, *faultproxy.Proxy) {
	t.Helper()
	dsn := os.Getenv("AGENTRY_TEST_POSTGRES_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Host == "" {
		t.Fatalf("the fault proxy needs a postgres:// URL DSN, got %q", dsn)
	}
	p, err := faultproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	u.Host = p.Addr()
	b := make([]byte, 6)
	rand.Read(b)
	schema := "agentry_test_" + hex.EncodeToString(b)
	d, err := postgres.Open(context.Background(), postgres.Config{DSN: u.String(), Schema: schema, QueryTimeout: bound, MaxOpenConns: 4})
	if err != nil {
		t.Fatalf("postgres test server unavailable: %v", err)
	}
	t.Cleanup(func() {
		d.Close()
		if raw, err := sql.Open("pgx", dsn); err == nil {
			raw.Exec(`DROP SCHEMA IF EXISTS "` + schema + `" CASCADE`)
			raw.Close()
		}
	})
	return d, p
}

// A database that stops answering fails the log's writes and reads within
// the store's query timeout (db.ErrUnavailable), as it fails the store's
// own calls: the run's terminal event, which the run waits for, and
// retention, whose loop a server's shutdown waits for, do not block for
// ever.
func TestLog_StalledDatabaseIsUnavailableWithinTheQueryTimeout(t *testing.T) {
	t.Parallel()
	d, p := proxiedPostgres(t, 300*time.Millisecond)
	ctx := context.Background()
	l, err := runlog.Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	const runID = "run-stalled-db"
	rec := l.Record(ctx, runID, 1, nil)
	rec.Add(content(runID, 0))
	p.Stall()
	defer p.Restore()
	calls := map[string]func() error{
		"terminal event": func() error { rec.Add(completed(runID)); return rec.Close() },
		"Read":           func() error { _, err := l.Read(ctx, runID, -1, 10); return err },
		"Last":           func() error { _, _, err := l.Last(ctx, runID); return err },
		"Count":          func() error { _, err := l.Count(ctx, runID); return err },
		"DeleteBefore":   func() error { _, err := l.DeleteBefore(ctx, 1, 1); return err },
	}
	for name, call := range calls {
		done := make(chan error, 1)
		go func() { done <- call() }()
		select {
		case err := <-done:
			if !errors.Is(err, db.ErrUnavailable) {
				t.Errorf("%s on a stalled database: %v, want db.ErrUnavailable", name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s on a stalled database still waits after 30s (query timeout 300ms)", name)
		}
	}
}
