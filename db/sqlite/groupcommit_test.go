package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/internal/groupcommit"
	"github.com/agentryhq/agentry/run"
)

// Concurrent run writes share transactions on SQLite (group commit); a
// write whose statements fail is rolled back alone and its batch-mates
// commit, each with the statements of its own with.
func TestSaveRunWith_GroupedWriteFailsAlone(t *testing.T) {
	t.Parallel()
	d := openTemp(t)
	ctx := context.Background()
	w := d.Driver().(db.SQLWriter).SQLWriter().DB
	if _, err := w.ExecContext(ctx, `CREATE TABLE marks (id TEXT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	errBoom := errors.New("boom")
	const n = 60
	hold := make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("g%d", i)
			s, r, err := completedRun(id)
			if err != nil {
				errs[i] = err
				return
			}
			if i > 0 {
				<-hold // the others queue up behind the first write's group
			}
			_, _, errs[i] = d.SaveRunWith(ctx, s, r, func(ctx context.Context, tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, `INSERT INTO marks (id) VALUES (?)`, id); err != nil {
					return err
				}
				if i == 0 {
					close(hold)
					time.Sleep(200 * time.Millisecond)
				}
				if i%3 == 1 {
					return fmt.Errorf("write %s: %w", id, errBoom)
				}
				return nil
			})
		})
	}
	wg.Wait()
	for i := range n {
		id := fmt.Sprintf("g%d", i)
		var marks int
		if err := w.QueryRowContext(ctx, `SELECT COUNT(*) FROM marks WHERE id = ?`, id).Scan(&marks); err != nil {
			t.Fatal(err)
		}
		_, getErr := d.GetRun(ctx, id)
		if i%3 == 1 {
			if !errors.Is(errs[i], errBoom) || marks != 0 || !errors.Is(getErr, db.ErrNotFound) {
				t.Errorf("failed write %s: err %v, marks %d, run %v", id, errs[i], marks, getErr)
			}
			continue
		}
		if errs[i] != nil || marks != 1 || getErr != nil {
			t.Errorf("write %s: err %v, marks %d, run %v", id, errs[i], marks, getErr)
		}
	}
}

// A write whose context is marked groupcommit.Alone (a streamed run's)
// commits in a transaction of its own, while the writes that queue up with
// it behind a running group share the next one.
func TestSaveRunWith_AloneWriteCommitsByItself(t *testing.T) {
	t.Parallel()
	d := openTemp(t)
	ctx := context.Background()
	const n = 6 // write 0 holds the writer; 1..n-1 queue behind it; 1 is alone
	hold := make(chan struct{})
	var mu sync.Mutex
	txs := make([]*sql.Tx, n)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("a%d", i)
			s, r, err := completedRun(id)
			if err != nil {
				errs[i] = err
				return
			}
			wctx := ctx
			if i == 1 {
				wctx = groupcommit.Alone(ctx)
			}
			if i > 0 {
				<-hold
			}
			_, _, errs[i] = d.SaveRunWith(wctx, s, r, func(ctx context.Context, tx *sql.Tx) error {
				mu.Lock()
				txs[i] = tx
				mu.Unlock()
				if i == 0 {
					close(hold)
					time.Sleep(200 * time.Millisecond) // the others queue up meanwhile
				}
				return nil
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	for i := 2; i < n; i++ {
		if txs[i] == txs[1] {
			t.Errorf("the alone write shared its transaction with write %d", i)
		}
	}
	if txs[2] != txs[n-1] {
		t.Error("the grouped writes queued behind one group did not share a transaction")
	}
}

// completedRun is a COMPLETED run of user u1's agent a1 in a session of its
// own, s-<id>.
func completedRun(id string) (*db.Session, *db.Run, error) {
	s := &db.Session{SessionID: "s-" + id, SessionType: run.TypeAgent, AgentID: "a1", UserID: "u1"}
	out := &run.Output{RunID: id, SessionID: s.SessionID, AgentID: "a1", UserID: "u1", Status: run.StatusCompleted, CreatedAt: time.Now().Unix()}
	r, err := db.RunFromOutput(out)
	return s, r, err
}
