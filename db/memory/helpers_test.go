package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/run"
)

func newDB(t testing.TB) *db.DB {
	t.Helper()
	d := db.New("", memory.New())
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func as(user string) context.Context {
	return db.WithUserScope(context.Background(), user)
}

func session(id, user string) *db.Session {
	return &db.Session{SessionID: id, SessionType: run.TypeAgent, AgentID: "agent-1", UserID: user}
}

func mustSession(t testing.TB, ctx context.Context, d *db.DB, s *db.Session) *db.Session {
	t.Helper()
	out, err := d.UpsertSession(ctx, s)
	if err != nil {
		t.Fatalf("UpsertSession(%s): %v", s.SessionID, err)
	}
	return out
}

func runRow(id, sessionID string, status run.Status) *db.Run {
	return &db.Run{
		RunID: id, SessionID: sessionID, RunType: run.TypeAgent, AgentID: "agent-1", Status: status,
		RunData: json.RawMessage(fmt.Sprintf(`{"run_id":%q,"content":"answer"}`, id)),
	}
}

func mustRun(t testing.TB, ctx context.Context, d *db.DB, r *db.Run) *db.Run {
	t.Helper()
	out, err := d.UpsertRun(ctx, r)
	if err != nil {
		t.Fatalf("UpsertRun(%s): %v", r.RunID, err)
	}
	return out
}

func ids[T any](rows []T, id func(T) string) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = id(r)
	}
	return out
}

func runIDs(rs []db.Run) string { return fmt.Sprint(ids(rs, func(r db.Run) string { return r.RunID })) }
