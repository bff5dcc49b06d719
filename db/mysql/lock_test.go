package mysql_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db/mysql"
)

// The schema lock is scoped to the database: a deployment holding it on one
// database does not stall another database's openers on the same server.
func TestLockSchema_IsPerDatabase(t *testing.T) {
	ctx := context.Background()
	mc, err := mysql.ParseDSN(serverDSN())
	if err != nil {
		t.Fatal(err)
	}
	admin, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	b := make([]byte, 6)
	rand.Read(b)
	held := "agentry_lock_" + hex.EncodeToString(b)
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+held+"`"); err != nil {
		t.Fatalf("mysql test server unavailable: %v\n%s", err, startHint)
	}
	defer admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+held+"`")
	mc.DBName = held
	other, err := sql.Open("mysql", mc.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	release, err := mysql.Dialect().LockSchema(ctx, conn, "agentry_schema")
	if err != nil {
		t.Fatalf("take the lock on %s: %v", held, err)
	}
	defer release()

	// Another database on the same server opens (and creates its tables
	// under the same lock key) while the first holds its lock; sharing the
	// lock, it would time out waiting for it.
	if d := openFreshCtx(t, ctx, mysql.Config{}); d == nil {
		t.Fatalf("opening another database failed while %s held its schema lock", held)
	}

	// The same database still serialises: a second taker times out.
	conn2, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	sctx, scancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer scancel()
	if rel, err := mysql.Dialect().LockSchema(sctx, conn2, "agentry_schema"); err == nil {
		rel()
		t.Fatal("a second taker on the same database got the schema lock while it was held")
	}
}
