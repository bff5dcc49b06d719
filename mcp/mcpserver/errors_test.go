package mcpserver

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver for the schema cleanup

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/internal/faultproxy"
)

// pgTestDSN is the loopback Postgres the storage-failure test runs against.
func pgTestDSN() string {
	if dsn := os.Getenv("AGENTRY_TEST_POSTGRES_DSN"); dsn != "" {
		return dsn
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// proxiedPostgres opens a Postgres database (a schema of its own) reached
// through a fault proxy the test can cut.
func proxiedPostgres(t *testing.T) (*db.DB, *faultproxy.Proxy) {
	t.Helper()
	u, err := url.Parse(pgTestDSN())
	if err != nil || u.Host == "" {
		t.Fatalf("the fault proxy needs a postgres:// URL DSN, got %q", pgTestDSN())
	}
	raw, err := sql.Open("pgx", pgTestDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	if err := raw.PingContext(context.Background()); err != nil {
		t.Fatalf("postgres test server unavailable at %s: %v (start it, or set AGENTRY_TEST_POSTGRES_DSN)", u.Host, err)
	}
	proxy, err := faultproxy.Start(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = proxy.Addr()
	b := make([]byte, 6)
	rand.Read(b)
	schema := "agentry_test_" + hex.EncodeToString(b)
	d, err := postgres.Open(context.Background(), postgres.Config{DSN: u.String(), Schema: schema, ID: "pg", QueryTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		proxy.Close()
		d.Close()
		raw.ExecContext(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
	})
	return d, proxy
}

// A storage failure reaches the MCP client as the HTTP routes word it: the
// database's own error (its host, port, user and database name) stays in
// the server log.
func TestToolErrors_HideDatabaseInternals(t *testing.T) {
	d, proxy := proxiedPostgres(t)
	h := newHarness(t, harnessConfig{db: d})
	cs := h.mustConnect(t, token(t, "alice", time.Now().Add(time.Hour)))
	if r := callTool(t, cs, "get_sessions", nil); r.IsError {
		t.Fatalf("get_sessions before the outage: %q", resultText(r))
	}
	proxy.Cut()

	host, port, _ := net.SplitHostPort(proxy.Addr())
	pg, _ := url.Parse(pgTestDSN())
	secrets := []string{"user=", "database=", pg.User.Username(), strings.TrimPrefix(pg.Path, "/"), host, port, "postgres"}
	for name, args := range map[string]map[string]any{
		"get_sessions":     nil,
		"get_memories":     nil,
		"get_session_runs": {"session_id": "s1"},
		"run_agent":        {"agent_id": "echo", "message": "x", "session_id": "s1"},
		"cancel_run":       {"agent_id": "echo", "run_id": "r1"},
		"continue_run":     {"agent_id": "echo", "run_id": "r1"},
	} {
		r := callTool(t, cs, name, args)
		text := resultText(r)
		if !r.IsError || !strings.Contains(text, "the database is unavailable; retry later") {
			t.Errorf("%s during an outage = %q (error %v), want the unavailable message", name, text, r.IsError)
		}
		for _, s := range secrets {
			if s != "" && strings.Contains(text, s) {
				t.Errorf("%s's error %q reveals %q", name, text, s)
			}
		}
	}
	if logs := h.logs.String(); !strings.Contains(logs, "mcp tool call failed") || !strings.Contains(logs, "get_sessions") {
		t.Errorf("the cause was not logged: %s", logs)
	}
}
