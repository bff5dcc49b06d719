package postgres_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
)

// SynchronousCommit reaches every connection of the store (the writes of a
// run included); an unknown value is refused at Open.
func TestOpen_SynchronousCommit(t *testing.T) {
	t.Parallel()
	d := openFresh(t, postgres.Config{SynchronousCommit: "off", MaxOpenConns: 3})
	ctx := context.Background()
	st, _ := sqlstore.FromDB(d)
	var conns []string
	var held []*sql.Conn
	for range 3 { // the pool's connections, held at once
		c, err := st.SQL().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		var v string
		if err := c.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&v); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, v)
	}
	if strings.Join(conns, ",") != "off,off,off" {
		t.Fatalf("synchronous_commit per connection: %v", conns)
	}
	for _, c := range held {
		c.Close()
	}
	if _, _, err := d.SaveRun(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent},
		&db.Run{RunID: "r", SessionID: "s", RunType: run.TypeAgent, Status: run.StatusCompleted, RunData: []byte(`{"run_id":"r"}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := d.GetRun(ctx, "r"); err != nil {
		t.Fatal(err)
	}

	_, err := postgres.Open(ctx, postgres.Config{DSN: testDSN(), Schema: "unused", SynchronousCommit: "sometimes"})
	if err == nil || !strings.Contains(err.Error(), "SynchronousCommit") {
		t.Fatalf("an unknown value opened: %v", err)
	}
}
