package mysql_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest"
	"github.com/agentryhq/agentry/db/mysql"
)

const startHint = "start it with: start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd (or set AGENTRY_TEST_MYSQL_DSN)"

// serverDSN names the server; tests create their own databases on it.
func serverDSN() string {
	if dsn := os.Getenv("AGENTRY_TEST_MYSQL_DSN"); dsn != "" {
		return dsn
	}
	return "root@tcp(127.0.0.1:3306)/test"
}

// openFresh opens a new database that is dropped after the test.
func openFresh(t testing.TB, cfg mysql.Config) *db.DB {
	t.Helper()
	d := openFreshCtx(t, context.Background(), cfg)
	if d == nil {
		t.FailNow()
	}
	return d
}

// openFreshCtx is openFresh with the open bounded by ctx; it reports an open
// error with t.Errorf and returns nil.
func openFreshCtx(t testing.TB, ctx context.Context, cfg mysql.Config) *db.DB {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "agentry_test_" + hex.EncodeToString(b)
	mc, err := mysql.ParseDSN(serverDSN())
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("mysql test server unavailable: %v\n%s", err, startHint)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	mc.DBName = name
	cfg.DSN = mc.FormatDSN()
	if cfg.MaxOpenConns == 0 {
		cfg.MaxOpenConns = 10
	}
	d, err := mysql.Open(ctx, cfg)
	if err != nil {
		t.Errorf("open %s: %v\n%s", name, err, startHint)
		return nil
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func TestConformance(t *testing.T) {
	t.Parallel()
	dbtest.Run(t, func(t *testing.T) *db.DB { return openFresh(t, mysql.Config{}) })
}

func TestConformanceSQL(t *testing.T) {
	t.Parallel()
	dbtest.RunSQL(t, func(t *testing.T) *db.DB { return openFresh(t, mysql.Config{}) })
}

func TestConformanceTraces(t *testing.T) {
	t.Parallel()
	dbtest.RunTraces(t, func(t *testing.T) *db.DB { return openFresh(t, mysql.Config{}) })
}
