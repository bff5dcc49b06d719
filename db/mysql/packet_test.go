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

// TestRunWrite_OverPacketLimitIsInvalidRecord: a run whose run_data is
// larger than the server's max_allowed_packet (16 MiB on MariaDB) cannot be
// sent: the server answers error 1153 and closes the connection, which the
// driver often reports as a reset connection (db.ErrUnavailable, which a
// caller retries). It is refused before it is sent, with
// db.ErrInvalidRecord, by UpsertRun and SaveRun alike; nothing is stored
// and the store keeps serving.
func TestRunWrite_OverPacketLimitIsInvalidRecord(t *testing.T) {
	t.Parallel()
	d := openFresh(t, mysql.Config{})
	st, _ := sqlstore.FromDB(d)
	var limit int
	if err := st.SQL().QueryRowContext(ctx, "SELECT @@max_allowed_packet").Scan(&limit); err != nil {
		t.Fatal(err)
	}
	sess := &db.Session{SessionID: "s1", SessionType: run.TypeAgent}
	if _, err := d.UpsertSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"run_id": "r1", "session_id": "s1", "content": strings.Repeat("x", limit)})
	r := &db.Run{RunID: "r1", SessionID: "s1", RunType: run.TypeAgent, Status: run.StatusCompleted, RunData: data}
	_, err := d.UpsertRun(ctx, r)
	if !errors.Is(err, db.ErrInvalidRecord) || errors.Is(err, db.ErrUnavailable) {
		t.Fatalf("UpsertRun of %d bytes of run_data (max_allowed_packet %d) = %v, want db.ErrInvalidRecord", len(data), limit, err)
	}
	if _, _, err := d.SaveRun(ctx, sess, r); !errors.Is(err, db.ErrInvalidRecord) || errors.Is(err, db.ErrUnavailable) {
		t.Fatalf("SaveRun of %d bytes of run_data (max_allowed_packet %d) = %v, want db.ErrInvalidRecord", len(data), limit, err)
	}
	if _, err := d.GetRun(ctx, "r1"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("GetRun after the refused writes = %v, want db.ErrNotFound", err)
	}
	// A run_data well within the limit is stored.
	r.RunData, _ = json.Marshal(map[string]any{"run_id": "r1", "session_id": "s1", "content": strings.Repeat("x", limit/2)})
	if _, err := d.UpsertRun(ctx, r); err != nil {
		t.Fatalf("UpsertRun of %d bytes (max_allowed_packet %d): %v", len(r.RunData), limit, err)
	}
}
