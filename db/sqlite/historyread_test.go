package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// historyIDs reads a session's history (up to 100 runs) and returns the run
// ids, oldest first. A read that waits for a writer held open by the test
// never ends: it fails at the read's deadline, far above any load's
// slowness (a timed threshold failed on a busy machine).
func historyIDs(t *testing.T, d *db.DB, sessionID string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, runs, err := d.SessionHistory(ctx, db.HistoryQuery{SessionID: sessionID, Limit: 100})
	if err != nil {
		t.Fatalf("session history %s: %v (waited for the writer?)", sessionID, err)
	}
	ids := make([]string, len(runs))
	for i, r := range runs {
		ids[i] = r.RunID
	}
	return ids
}

func saveTurn(t *testing.T, d *db.DB, sessionID, runID string, with db.TxFunc) {
	t.Helper()
	s := &db.Session{SessionID: sessionID, SessionType: run.TypeAgent, AgentID: "a1"}
	r, err := db.RunFromOutput(&run.Output{RunID: runID, SessionID: sessionID, AgentID: "a1", Status: run.StatusCompleted, CreatedAt: time.Now().Unix()})
	if err != nil {
		t.Error(err)
		return
	}
	if with != nil {
		_, _, err = d.SaveRunWith(context.Background(), s, r, with)
	} else {
		_, _, err = d.SaveRun(context.Background(), s, r)
	}
	if err != nil {
		t.Errorf("save %s: %v", runID, err)
	}
}

// A history read may run on the writer connection when it is idle (its page
// cache is warm); it must neither wait for a write that holds the writer nor
// see that write before it commits.
func TestSessionHistory_DoesNotWaitForABusyWriter(t *testing.T) {
	t.Parallel()
	d := openTemp(t)
	saveTurn(t, d, "s1", "r1", nil)
	if got := historyIDs(t, d, "s1"); !slices.Equal(got, []string{"r1"}) {
		t.Fatalf("history = %v, want [r1]", got)
	}

	// A run write holds the gate and the writer connection, uncommitted.
	entered, release := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		saveTurn(t, d, "s1", "r2", func(context.Context, *sql.Tx) error {
			close(entered)
			<-release
			return nil
		})
	})
	<-entered
	if got := historyIDs(t, d, "s1"); !slices.Equal(got, []string{"r1"}) {
		t.Errorf("history during the write = %v, want [r1] (nothing uncommitted)", got)
	}
	close(release)
	wg.Wait()
	if got := historyIDs(t, d, "s1"); !slices.Equal(got, []string{"r1", "r2"}) {
		t.Fatalf("history after the write = %v, want [r1 r2]", got)
	}

	// Another user of the writer pool (the durable queue's River client)
	// holds the connection without the gate.
	w := d.Driver().(db.SQLWriter).SQLWriter().DB
	conn, err := w.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := historyIDs(t, d, "s1"); !slices.Equal(got, []string{"r1", "r2"}) {
		t.Errorf("history while the writer pool is held = %v, want [r1 r2]", got)
	}
	if _, err := d.HistoryRuns(context.Background(), db.HistoryQuery{SessionID: "s1", Limit: 3}); err != nil {
		t.Errorf("history runs while the writer pool is held: %v", err)
	}
	conn.Close()
}

// Concurrent conversations: every turn reads its session's history (on the
// idle writer or the readers, whichever is free) and then writes a run; each
// read sees exactly the runs its conversation stored before it.
func TestSessionHistory_ConcurrentConversationsReadTheirWrites(t *testing.T) {
	t.Parallel()
	d := openTemp(t)
	const sessions, turns = 8, 15
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Go(func() {
			sid := fmt.Sprintf("c%d", s)
			var want []string
			for i := range turns {
				if i > 0 {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					_, runs, err := d.SessionHistory(ctx, db.HistoryQuery{SessionID: sid, Limit: 100})
					cancel()
					if err != nil {
						t.Errorf("%s turn %d: %v", sid, i, err)
						return
					}
					got := make([]string, len(runs))
					for j, r := range runs {
						got[j] = r.RunID
					}
					if !slices.Equal(got, want) {
						t.Errorf("%s turn %d: history %v, want %v", sid, i, got, want)
						return
					}
				}
				id := fmt.Sprintf("%s-r%02d", sid, i)
				saveTurn(t, d, sid, id, nil)
				want = append(want, id)
			}
		})
	}
	wg.Wait()
}
