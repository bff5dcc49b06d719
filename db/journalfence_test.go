package db_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/run"
)

// A journal write fence (the durable queue's job fence) runs inside the
// transaction of every step write of a journal kept in its database, and
// its refusal records nothing; a journal kept in another database never
// runs it (its statements are for the fence's database).
func TestWithJournalWriteFence_RunsInTheStepWritesOfItsDatabaseOnly(t *testing.T) {
	ctx := context.Background()
	open := func(name string) (*db.DB, *db.Journal) {
		d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), name)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		j, err := db.NewJournal(d)
		if err != nil {
			t.Fatal(err)
		}
		return d, j
	}
	fenced, jf := open("fenced.db")
	_, jo := open("other.db")
	var calls int
	fctx := db.WithJournalWriteFence(ctx, fenced, func(_ context.Context, tx *sql.Tx) error {
		calls++
		if tx == nil {
			t.Error("the fence ran outside a transaction")
		}
		return run.ErrFenced
	})
	step := func(j *db.Journal, idempotent bool) error {
		_, err := j.Do(fctx, run.JournalStep{RunID: "r1", Key: "tool:0", Kind: "tool", Attempt: 1, Idempotent: idempotent},
			func(context.Context) (json.RawMessage, error) { return json.RawMessage(`"x"`), nil })
		return err
	}
	for _, idempotent := range []bool{false, true} {
		if err := step(jf, idempotent); !errors.Is(err, run.ErrFenced) {
			t.Errorf("step (idempotent %v) of the fence's database: %v, want run.ErrFenced", idempotent, err)
		}
	}
	if err := jf.Fence(fctx, "r1", 1); !errors.Is(err, run.ErrFenced) {
		t.Errorf("Fence of the fence's database: %v, want run.ErrFenced", err)
	}
	if calls != 3 {
		t.Errorf("the fence ran %d times, want 3", calls)
	}
	if steps, err := jf.Steps(ctx, "r1"); err != nil || len(steps) != 0 {
		t.Errorf("refused steps recorded: %+v, %v", steps, err)
	}
	calls = 0
	if err := step(jo, false); err != nil {
		t.Errorf("step of another database: %v", err)
	}
	if calls != 0 {
		t.Errorf("the fence ran %d times in another database's journal", calls)
	}
}
