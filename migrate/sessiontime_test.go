package migrate_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/migrate/migratetest"
)

// A 2.x SQLite sessions table holds what Python handed it: a created_at
// written as time.time() is a REAL, and one a tool wrote may be text. The
// copy scanned it into an int64, so one such session failed every Up. A
// REAL reads as its whole seconds, text that is no number as 0, and the
// session's runs are copied.
func TestUp_SQLiteSessionCreatedAtOfAnyType(t *testing.T) {
	onEachBackend(t, []variant{variants[0]}, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{
			legacyAgentSession("a-real", `[{"run_id": "run-a", "agent_id": "a1"}]`),
			legacyAgentSession("b-text", `[{"run_id": "run-b", "agent_id": "a1"}]`),
			legacyAgentSession("c-numeric-text", `[{"run_id": "run-c", "agent_id": "a1"}]`),
			legacyAgentSession("d-int", `[{"run_id": "run-d", "agent_id": "a1", "created_at": 1700000009}]`),
		})
		f.execArgs(t, `UPDATE agno_sessions SET created_at = 1700000001.75 WHERE session_id = 'a-real'`)
		f.execArgs(t, `UPDATE agno_sessions SET created_at = 'yesterday' WHERE session_id = 'b-text'`)
		f.execArgs(t, `UPDATE agno_sessions SET created_at = '1700000003' WHERE session_id = 'c-numeric-text'`)
		m := f.manager(t)
		sum, err := m.Up(ctx, "")
		if err != nil {
			t.Fatalf("Up: %v", err)
		}
		if sum.RunsCopied != 4 || sum.BadRowCount != 0 {
			t.Fatalf("Up = %+v, want 4 runs copied", sum)
		}
		got := f.readRuns(t)
		for id, want := range map[string]int64{"run-a": 1700000001, "run-b": 0, "run-c": 1700000003, "run-d": 1700000009} {
			if got[id].CreatedAt != want {
				t.Errorf("%s created_at = %d, want %d", id, got[id].CreatedAt, want)
			}
		}
		runs, err := m.MergedSessionRuns(ctx, "a-real")
		if err != nil || len(runs) != 1 || runs[0].CreatedAt != 1700000001 {
			t.Errorf("MergedSessionRuns(a-real) = %+v, %v; want run-a", runs, err)
		}
	})
}
