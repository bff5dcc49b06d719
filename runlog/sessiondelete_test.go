package runlog_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/runlog"
)

// storeRun stores a finished run of the session.
func storeRun(t *testing.T, d *db.DB, sessionID, runID string) {
	t.Helper()
	ctx := context.Background()
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: sessionID, SessionType: run.TypeAgent, AgentID: "a"}); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"run_id": runID, "session_id": sessionID, "agent_id": "a", "status": "COMPLETED"})
	if _, err := d.UpsertRun(ctx, &db.Run{RunID: runID, SessionID: sessionID, RunType: run.TypeAgent, AgentID: "a",
		Status: run.StatusCompleted, RunData: data}); err != nil {
		t.Fatal(err)
	}
}

// The events of a deleted session's runs hold what the runs streamed (the
// session's content): they are deleted with the session, in its
// transaction; other runs' events stay.
func TestDeleteSessions_DeletesTheRunsEvents(t *testing.T) {
	for _, name := range []string{"sqlite", "postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := testdbs.All[name](t)
			ctx := context.Background()
			l, err := runlog.Open(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			storeRun(t, d, "s1", "r1a")
			storeRun(t, d, "s1", "r1b")
			storeRun(t, d, "s2", "r2")
			for _, id := range []string{"r1a", "r1b", "r2"} {
				evs := []runlog.Pending{{Event: "RunContent", Data: []byte(`{"content":"secret of ` + id + `"}`)}, {Event: "RunCompleted", Data: []byte(`{}`), Final: true}}
				if err := l.Append(ctx, id, 1, evs, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.DeleteSessions(ctx, "s1"); err != nil {
				t.Fatal(err)
			}
			for id, want := range map[string]int64{"r1a": 0, "r1b": 0, "r2": 2} {
				if n, err := l.Count(ctx, id); err != nil || n != want {
					t.Fatalf("run %s has %d events (%v), want %d", id, n, err, want)
				}
			}
		})
	}
}
