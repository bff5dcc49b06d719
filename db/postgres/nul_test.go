package postgres_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
)

// TestNUL_RemovedFromJSONRefusedInText: jsonb holds no U+0000, so the
// store removes a NUL from the JSON it writes, as Agno's Postgres writer
// does (the text "\u0000", an escaped backslash, is kept); a NUL byte in a
// text column, which Postgres cannot store either, is db.ErrInvalidRecord.
func TestNUL_RemovedFromJSONRefusedInText(t *testing.T) {
	t.Parallel()
	d := testdbs.Postgres(t)
	data := json.RawMessage(`{"run_id":"r","content":"a\u0000b\\u0000c\\\u0000d"}`)
	if _, _, err := d.SaveRun(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent},
		&db.Run{RunID: "r", SessionID: "s", RunType: run.TypeAgent, Status: run.StatusCompleted, RunData: data}); err != nil {
		t.Fatal(err)
	}
	got, err := d.GetRun(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(got.RunData, &out); err != nil {
		t.Fatal(err)
	}
	if want := `ab\u0000c\d`; out.Content != want {
		t.Fatalf("content = %q, want %q", out.Content, want)
	}

	_, err = d.UpsertSession(ctx, &db.Session{SessionID: "s2", SessionType: run.TypeAgent, AgentID: "a\x00b"})
	if !errors.Is(err, db.ErrInvalidRecord) {
		t.Fatalf("UpsertSession with a NUL in agent_id = %v, want db.ErrInvalidRecord", err)
	}
}

// TestJSON_LoneSurrogateIsInvalidRecord: JSON with a lone surrogate escape
// is valid to Go (json.Valid) but not to jsonb (SQLSTATE 22P02); a session
// state holding one is db.ErrInvalidRecord (as MariaDB's JSON check makes
// it on MySQL), not an unclassified failure.
func TestJSON_LoneSurrogateIsInvalidRecord(t *testing.T) {
	t.Parallel()
	d := testdbs.Postgres(t)
	_, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent,
		SessionData: json.RawMessage(`{"session_state":{"x":"a\ud800b"}}`)})
	if !errors.Is(err, db.ErrInvalidRecord) {
		t.Fatalf("UpsertSession with a lone surrogate in session_data = %v, want db.ErrInvalidRecord", err)
	}
}
