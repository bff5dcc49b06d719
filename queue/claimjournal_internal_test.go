package queue

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/run"
)

// On SQLite the claim looks at the run's journal in its transaction: a
// first attempt's run finds it empty (its first journal reads are answered
// without the database); an attempt after one that recorded a step does not.
func TestClaim_SQLiteSaysWhetherTheJournalIsEmpty(t *testing.T) {
	d := testdbs.SQLite(t)
	ctx := context.Background()
	q, err := Open(ctx, d, Config{MaxAttempts: 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if q.journal == nil {
		t.Fatal("the SQLite queue keeps no step journal")
	}
	sess := &db.Session{SessionID: "s1", SessionType: run.TypeAgent, AgentID: "a1", UserID: "u1"}
	r, err := db.RunFromOutput(&run.Output{RunID: "r1", SessionID: "s1", AgentID: "a1", UserID: "u1", Status: run.StatusPending, CreatedAt: time.Now().Unix()})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := q.Enqueue(ctx, sess, r, &Job{ID: "r1", ComponentType: "agent", ComponentID: "a1", SessionID: "s1", UserID: "u1"}); err != nil {
		t.Fatal(err)
	}
	j, claimed, err := q.claim(ctx, "r1", 1, 1)
	if err != nil || !claimed {
		t.Fatalf("claim of attempt 1: claimed %v, %v", claimed, err)
	}
	if !j.freshJournal {
		t.Fatal("attempt 1's claim did not find the run's journal empty")
	}
	step := run.JournalStep{RunID: "r1", Key: "model:0", Kind: "model", Attempt: 1, Idempotent: true}
	if _, err := q.journal.Do(ctx, step, func(context.Context) (json.RawMessage, error) { return json.RawMessage(`"ok"`), nil }); err != nil {
		t.Fatal(err)
	}
	// Attempt 1's worker died: its lease expired.
	if _, err := q.w.ExecContext(ctx, q.sql(`UPDATE `+q.jobs+` SET locked_at = locked_at - 3600 WHERE id = ?`), "r1"); err != nil {
		t.Fatal(err)
	}
	j, claimed, err = q.claim(ctx, "r1", 2, 1)
	if err != nil || !claimed {
		t.Fatalf("claim of attempt 2: claimed %v, %v", claimed, err)
	}
	if j.freshJournal {
		t.Fatal("attempt 2's claim found the journal empty, but attempt 1 recorded a step")
	}
}
