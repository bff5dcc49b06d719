package queue_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

// On SQLite the fenced writes of journal steps join the group commit of
// run writes: steps of concurrent runs that wait while a group holds the
// writer commit together, not one transaction each, and each is recorded.
func TestJournalSteps_SQLiteShareGroupCommits(t *testing.T) {
	d, commits := countedSQLite(t)
	j, err := db.NewJournal(d)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s, r, _ := pending("holder", "u1")
	held, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		_, _, err := d.SaveRunWith(ctx, s, r, func(context.Context, *sql.Tx) error {
			close(held)
			<-release // the steps below queue up while this group holds the writer
			return nil
		})
		holder <- err
	}()
	<-held
	const n = 20
	before := commits.Load()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			step := run.JournalStep{RunID: fmt.Sprintf("jr-%d", i), Key: "tool:call_1", Kind: "tool", Attempt: 1, Idempotent: true}
			_, errs[i] = j.Do(ctx, step, func(context.Context) (json.RawMessage, error) { return json.RawMessage(`"noted"`), nil })
		})
	}
	time.Sleep(300 * time.Millisecond) // let the steps reach the writer's queue (fewer make the count larger, not flaky)
	close(release)
	wg.Wait()
	if err := <-holder; err != nil {
		t.Fatal(err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("step of run jr-%d: %v", i, err)
		}
		steps, err := j.Steps(ctx, fmt.Sprintf("jr-%d", i))
		if err != nil || len(steps) != 1 || steps[0].Status != db.StepDone || string(steps[0].Result) != `"noted"` {
			t.Fatalf("run jr-%d's journal: %+v, %v", i, steps, err)
		}
	}
	// The holder's group, then the waiting steps: a few groups, not one
	// commit per step.
	if c := commits.Load() - before; c > n/2 {
		t.Fatalf("%d commits for the holder's write and %d journal steps that waited together (want at most %d)", c, n, n/2)
	}
}
