package runlog_test

import (
	"context"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/internal/faultproxy"
)

// mysqlBound opens a fresh database of the MariaDB test server whose calls
// time out after bound, its connections through a fault proxy when proxied.
// The proxy is nil when not proxied.
func mysqlBound(t *testing.T, bound time.Duration, proxied bool) (*db.DB, *faultproxy.Proxy) {
	t.Helper()
	mc, err := gomysql.ParseDSN(testdbs.MySQLDatabaseDSN(t))
	if err != nil {
		t.Fatal(err)
	}
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
