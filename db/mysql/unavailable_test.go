package mysql_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/internal/faultproxy"
	"github.com/agentryhq/agentry/run"
)

// openProxied opens a new database through a fault proxy in front of the
// test server.
func openProxied(t *testing.T, timeout time.Duration) (*db.DB, *faultproxy.Proxy) {
	t.Helper()
	ctx := context.Background()
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
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"); err != nil {
		t.Fatalf("mysql test server unavailable: %v\n%s", err, startHint)
	}
	t.Cleanup(func() { admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`") })
	p, err := faultproxy.Start(mc.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	mc.DBName, mc.Addr = name, p.Addr()
	d, err := mysql.Open(ctx, mysql.Config{DSN: mc.FormatDSN(), QueryTimeout: timeout, MaxOpenConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, p
}

// TestUnavailable_StalledOrCutConnection: a stalled connection ends at the
// query timeout, a cut one at once, both with db.ErrUnavailable.
func TestUnavailable_StalledOrCutConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const bound = 300 * time.Millisecond
	d, p := openProxied(t, bound)
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}); err != nil {
		t.Fatal(err)
	}
	p.Stall()
	start := time.Now()
	if _, err := d.GetSession(ctx, "s"); !errors.Is(err, db.ErrUnavailable) || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Errorf("GetSession on a stalled connection: %v", err)
	}
	if took := time.Since(start); took > 10*bound {
		t.Errorf("took %s with a %s bound", took, bound)
	}
	p.Cut()
	if err := d.Ping(ctx); !errors.Is(err, db.ErrUnavailable) {
		t.Errorf("Ping through a cut connection: %v", err)
	}
	if _, err := d.GetSession(ctx, "s"); !errors.Is(err, db.ErrUnavailable) {
		t.Errorf("GetSession through a cut connection: %v", err)
	}
}

// TestSaveRun_ACommitWhoseAcknowledgementIsLostIsNotAFailure: see the
// Postgres test of the same name.
func TestSaveRun_ACommitWhoseAcknowledgementIsLostIsNotAFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, p := openProxied(t, 2*time.Second)
	// COM_QUERY (0x03) "COMMIT"; "READ COMMITTED" must not match.
	p.LoseReplyTo([]byte("\x03COMMIT"))
	_, out, err := d.SaveRun(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent},
		&db.Run{RunID: "r1", SessionID: "s", RunType: run.TypeAgent, Status: run.StatusCompleted, RunData: []byte(`{"run_id":"r1"}`)})
	if err != nil || out == nil || out.RunID != "r1" {
		t.Fatalf("SaveRun = %+v, %v although the run was committed", out, err)
	}
}
