package postgres_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/internal/faultproxy"
	"github.com/agentryhq/agentry/run"
)

// openProxied opens a fresh schema through a fault proxy in front of the
// test server.
func openProxied(t *testing.T, timeout time.Duration) (*db.DB, *faultproxy.Proxy) {
	t.Helper()
	raw := rawDB(t)
	u, err := url.Parse(testDSN())
	if err != nil || u.Host == "" {
		t.Fatalf("the fault proxy needs a postgres:// URL DSN, got %q", testDSN())
	}
	p, err := faultproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	u.Host = p.Addr()
	schema := randomName()
	d, err := postgres.Open(ctx, postgres.Config{DSN: u.String(), Schema: schema, QueryTimeout: timeout, MaxOpenConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.Close()
		raw.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	})
	return d, p
}

// TestQueryTimeout_AStalledDatabaseIsUnavailableWithinTheBound stalls the
// connection to Postgres: reads, writes and Ping end with db.ErrUnavailable
// instead of blocking, and everything works again once it answers. Every
// kind of call is bounded, files and first runs included.
func TestQueryTimeout_AStalledDatabaseIsUnavailableWithinTheBound(t *testing.T) {
	t.Parallel()
	const bound = 300 * time.Millisecond
	d, p := openProxied(t, bound)
	sess := &db.Session{SessionID: "s", SessionType: run.TypeAgent}
	if _, err := d.UpsertSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	p.Stall()
	calls := map[string]func() error{
		"GetSession":    func() error { _, err := d.GetSession(ctx, "s"); return err },
		"UpsertSession": func() error { _, err := d.UpsertSession(ctx, sess); return err },
		"Ping":          func() error { return d.Ping(ctx) },
		"FirstRuns":     func() error { _, err := d.FirstRuns(ctx, []db.Session{*sess}); return err },
		"PutFile":       func() error { _, err := d.PutFile(ctx, &db.File{Namespace: "n", Path: "p"}); return err },
		"GetFile":       func() error { _, err := d.GetFile(ctx, "n", "p"); return err },
		"DeleteFile":    func() error { return d.DeleteFile(ctx, "n", "p") },
	}
	for name, call := range calls {
		start := time.Now()
		err := call()
		if !errors.Is(err, db.ErrUnavailable) || !strings.Contains(err.Error(), "no answer within 300ms") {
			t.Errorf("%s on a stalled database: %v, want db.ErrUnavailable naming the bound", name, err)
		}
		// Generous: the bound plus scheduling on a loaded machine, far below
		// the minutes a stalled TCP connection can block.
		if took := time.Since(start); took > 10*bound {
			t.Errorf("%s took %s with a %s bound", name, took, bound)
		}
	}
	p.Restore()
	deadline := time.Now().Add(10 * time.Second)
	for d.Ping(ctx) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the database did not come back after the stall")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := d.GetSession(ctx, "s"); err != nil {
		t.Fatalf("after the stall: %v", err)
	}
}

// TestQueryTimeout_AStalledHistoryReadIsUnavailable stalls the connection
// right after a call used it, so that database/sql hands it out again
// without pgx's idle check (a ping, after a second), and the stall meets
// the read itself: the history read and GetSession, which run through
// pgx's own rows (queryRows), must end with db.ErrUnavailable within the
// bound, not block.
func TestQueryTimeout_AStalledHistoryReadIsUnavailable(t *testing.T) {
	t.Parallel()
	const bound = 300 * time.Millisecond
	d, p := openProxied(t, bound)
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}); err != nil {
		t.Fatal(err)
	}
	reads := []struct {
		name string
		read func() error
	}{
		{"SessionHistoryRefs", func() error {
			_, _, err := d.SessionHistoryRefs(ctx, db.HistoryQuery{SessionID: "s", Limit: 3})
			return err
		}},
		{"GetSession", func() error { _, err := d.GetSession(ctx, "s"); return err }},
	}
	for _, r := range reads {
		deadline := time.Now().Add(10 * time.Second)
		for r.read() != nil { // the connection is back and was just used
			if time.Now().After(deadline) {
				t.Fatalf("%s: the database did not come back", r.name)
			}
			time.Sleep(20 * time.Millisecond)
		}
		p.Stall()
		done := make(chan error, 1)
		go func() { done <- r.read() }()
		select {
		case err := <-done:
			if !errors.Is(err, db.ErrUnavailable) {
				t.Errorf("%s on a stalled database: %v, want db.ErrUnavailable", r.name, err)
			}
		case <-time.After(10 * bound):
			t.Fatalf("%s on a stalled database did not end within %s (bound %s)", r.name, 10*bound, bound)
		}
		p.Restore()
	}
}

// TestUnavailable_ACutConnectionIsUnavailable cuts the connection: calls
// fail with db.ErrUnavailable, not an unclassified error.
func TestUnavailable_ACutConnectionIsUnavailable(t *testing.T) {
	t.Parallel()
	d, p := openProxied(t, time.Second)
	p.Cut()
	if _, err := d.GetSession(ctx, "s"); !errors.Is(err, db.ErrUnavailable) {
		t.Errorf("GetSession through a cut connection: %v, want db.ErrUnavailable", err)
	}
	if _, _, err := d.SessionHistoryRefs(ctx, db.HistoryQuery{SessionID: "s", Limit: 3}); !errors.Is(err, db.ErrUnavailable) {
		t.Errorf("SessionHistoryRefs through a cut connection: %v, want db.ErrUnavailable", err)
	}
	if err := d.Ping(ctx); !errors.Is(err, db.ErrUnavailable) {
		t.Errorf("Ping through a cut connection: %v, want db.ErrUnavailable", err)
	}
}

// TestSaveRun_ACommitWhoseAcknowledgementIsLostIsNotAFailure: the
// connection is lost after Postgres committed the run but before it
// acknowledged the COMMIT. The run is stored, so SaveRun must not report
// it failed (a server would otherwise tell the client StorageError for a
// stored run).
func TestSaveRun_ACommitWhoseAcknowledgementIsLostIsNotAFailure(t *testing.T) {
	t.Parallel()
	d, p := openProxied(t, 2*time.Second)
	sess := &db.Session{SessionID: "s", SessionType: run.TypeAgent, SessionData: []byte(`{"n":1}`)}
	r := &db.Run{RunID: "r1", SessionID: "s", RunType: run.TypeAgent, Status: run.StatusCompleted, RunData: []byte(`{"run_id":"r1"}`)}
	p.LoseReplyTo([]byte("commit\x00")) // the simple-protocol Query pgx sends to commit
	saved, out, err := d.SaveRun(ctx, sess, r)
	if err != nil {
		t.Fatalf("SaveRun = %v although the run was committed", err)
	}
	if saved == nil || saved.SessionID != "s" || out == nil || out.RunID != "r1" || out.RunIndex == nil {
		t.Fatalf("SaveRun = %+v, %+v", saved, out)
	}
	if got, err := d.GetRun(ctx, "r1"); err != nil || got.Status != run.StatusCompleted {
		t.Fatalf("stored run: %+v, %v", got, err)
	}
}

// TestSaveRun_ALostWriteIsStillAFailure: the connection is lost before the
// write reached the database; SaveRun reports db.ErrUnavailable.
func TestSaveRun_ALostWriteIsStillAFailure(t *testing.T) {
	t.Parallel()
	d, p := openProxied(t, 2*time.Second)
	p.Cut()
	_, _, err := d.SaveRun(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent},
		&db.Run{RunID: "r1", SessionID: "s", RunType: run.TypeAgent, Status: run.StatusCompleted, RunData: []byte(`{}`)})
	if !errors.Is(err, db.ErrUnavailable) {
		t.Fatalf("SaveRun through a cut connection = %v, want db.ErrUnavailable", err)
	}
}

// A connection the server ends (an administrator's pg_terminate_backend, a
// shutdown: SQLSTATE 57P01) is the database being unavailable, as a lost
// connection is, not an unclassified error; so is a server still starting
// or shutting down (57P03, 57P02) and one out of connections (53300).
func TestMarkUnavailable_ServerEndedConnection(t *testing.T) {
	t.Parallel()
	raw := rawDB(t)
	conn, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var pid int
	if err := conn.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, "SELECT pg_terminate_backend($1)", pid); err != nil {
		t.Fatal(err)
	}
	var one int
	err = conn.QueryRowContext(ctx, "SELECT 1").Scan(&one)
	if err == nil {
		t.Fatal("a query on a terminated backend succeeded")
	}
	if !errors.Is(db.MarkUnavailable(err), db.ErrUnavailable) {
		t.Fatalf("MarkUnavailable(%v) is not ErrUnavailable", err)
	}
}
