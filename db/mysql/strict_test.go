package mysql_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/run"
)

// TestOpen_RefusesOverlongValuesOnANonStrictConnection: a server whose
// sql_mode is not strict (MySQL 5.6's default, some managed servers, or a
// DSN's sql_mode) stores a value too long for its column cut, with only a
// warning, from a plain INSERT or UPDATE too. The driver's connections add
// STRICT_ALL_TABLES to whatever mode they get, so the value is refused.
func TestOpen_RefusesOverlongValuesOnANonStrictConnection(t *testing.T) {
	t.Parallel()
	st, _ := sqlstore.FromDB(openFresh(t, mysql.Config{}))
	mc, err := mysql.ParseDSN(mysqlDSNOf(t, st))
	if err != nil {
		t.Fatal(err)
	}
	mc.Params = map[string]string{"sql_mode": "''"} // no mode at all
	d, err := mysql.Open(ctx, mysql.Config{DSN: mc.FormatDSN(), MaxOpenConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	long := strings.Repeat("x", 300)

	// The session's and the run's INSERT, in one transaction.
	sess := &db.Session{SessionID: "s1", SessionType: run.TypeAgent}
	r := &db.Run{RunID: "r1", SessionID: "s1", RunType: run.TypeAgent, AgentID: long, Status: run.StatusCompleted,
		RunData: json.RawMessage(`{"run_id":"r1","session_id":"s1","content":"hi"}`)}
	if _, _, err := d.SaveRun(ctx, sess, r); !errors.Is(err, db.ErrInvalidRecord) {
		t.Fatalf("SaveRun with a 300-character agent_id = %v, want db.ErrInvalidRecord", err)
	}
	if _, err := d.GetRun(ctx, "r1"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("the refused run is stored (%v)", err)
	}

	// The session's UPDATE, when the row exists.
	if _, err := d.UpsertSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s1", SessionType: run.TypeAgent, AgentID: long}); !errors.Is(err, db.ErrInvalidRecord) {
		t.Fatalf("UpsertSession with a 300-character agent_id = %v, want db.ErrInvalidRecord", err)
	}
	got, err := d.GetSession(ctx, "s1")
	if err != nil || got.AgentID != "" {
		t.Fatalf("session after the refused update: agent_id of %d characters (%v)", len(got.AgentID), err)
	}
}
