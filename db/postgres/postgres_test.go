package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/internal/sqlstore"
)

const startHint = "start it with: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start (or set AGENTRY_TEST_POSTGRES_DSN)"

func testDSN() string {
	if dsn := os.Getenv("AGENTRY_TEST_POSTGRES_DSN"); dsn != "" {
		return dsn
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

func randomName() string {
	b := make([]byte, 6)
	rand.Read(b)
	return "agentry_test_" + hex.EncodeToString(b)
}

// openFresh opens a database in a new schema that is dropped after the test.
func openFresh(t testing.TB, cfg postgres.Config) *db.DB {
	t.Helper()
	d, _ := openFreshDrop(t, cfg)
	return d
}

// openFreshDrop is openFresh with the drop of its schema (and the close of
// its pool) returned too, for a caller that opens many in one test: the
// drop runs once, when called or at the test's end.
func openFreshDrop(t testing.TB, cfg postgres.Config) (*db.DB, func()) {
	t.Helper()
	cfg.DSN = testDSN()
	if cfg.Schema == "" {
		cfg.Schema = randomName()
	}
	if cfg.MaxOpenConns == 0 {
		cfg.MaxOpenConns = 10
	}
	d, err := postgres.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("postgres test server unavailable or open failed: %v\n%s", err, startHint)
	}
	drop := sync.OnceFunc(func() {
		st, _ := sqlstore.FromDB(d)
		if _, err := st.SQL().ExecContext(context.Background(), "DROP SCHEMA IF EXISTS "+st.SQLDialect().Quote(cfg.Schema)+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", cfg.Schema, err)
		}
		d.Close()
	})
	t.Cleanup(drop)
	return d, drop
}

func TestConformance(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T) *db.DB { return openFresh(t, postgres.Config{}) })
}

func TestConformanceSQL(t *testing.T) {
	t.Parallel()
	dbtest.RunSQL(t, func(t *testing.T) *db.DB { return openFresh(t, postgres.Config{}) })
}

func TestConformanceTraces(t *testing.T) {
	t.Parallel()
	dbtest.RunTraces(t, func(t *testing.T) *db.DB { return openFresh(t, postgres.Config{}) })
}
