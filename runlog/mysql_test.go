package runlog_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/internal/faultproxy"
)

// mysqlServerDSN is the MariaDB test server (AGENTRY_TEST_MYSQL_DSN, default
// the loopback server as root).
func mysqlServerDSN() string {
	if dsn := os.Getenv("AGENTRY_TEST_MYSQL_DSN"); dsn != "" {
		return dsn
	}
	return "root@tcp(127.0.0.1:3306)/test"
}

// mysqlBound opens a fresh database of the MariaDB test server whose calls
// time out after bound, its connections through a fault proxy when proxied.
// The proxy is nil when not proxied.
func mysqlBound(t *testing.T, bound time.Duration, proxied bool) (*db.DB, *faultproxy.Proxy) {
	t.Helper()
	mc, err := mysql.ParseDSN(mysqlServerDSN())
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	b := make([]byte, 6)
	rand.Read(b)
	name := "agentry_test_" + hex.EncodeToString(b)
	if _, err := admin.ExecContext(context.Background(), "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("mysql test server unavailable: %v\nstart it with: start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd", err)
	}
	t.Cleanup(func() {
		if _, err := admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	mc.DBName = name
	var p *faultproxy.Proxy
	if proxied {
		if p, err = faultproxy.Start(mc.Addr); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		mc.Addr = p.Addr()
	}
	d, err := mysql.Open(context.Background(), mysql.Config{DSN: mc.FormatDSN(), QueryTimeout: bound, MaxOpenConns: 4})
	if err != nil {
		t.Fatalf("open the mysql test database: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d, p
}
