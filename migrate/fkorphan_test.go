package migrate_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// A 2.x process deleting a session while Up copies: where the copy drops
// the runs table's foreign key (Postgres) the deletion cannot cascade to the
// runs already copied, and restoring the key failed on them, on every later
// Up too. Up now deletes them as the cascade would have, then restores the
// key.
func TestUp_SessionDeletedDuringTheCopyLeavesNoRunsBehind(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		var sessions []migratetest.Session
		for i := range 6 {
			id := fmt.Sprintf("s-%d", i)
			sessions = append(sessions, legacyAgentSession(id, "["+run("run-"+id+"-a", id, "")+", "+run("run-"+id+"-b", id, "")+"]"))
		}
		f.insert(t, sessions)
		var once sync.Once
		m := f.manager(t, func(c *migrate.Config) {
			c.BatchSize = 1
			c.Progress = func(migrate.Progress) {
				once.Do(func() { f.execArgs(t, "DELETE FROM "+f.table("agno_sessions")+" WHERE session_id = ?", "s-0") })
			}
		})
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatalf("Up: %v", err)
		}
		runs := f.readRuns(t)
		if _, ok := runs["run-s-0-a"]; ok {
			t.Error("the runs of deleted session s-0 stayed in the runs table")
		}
		if len(runs) != 10 {
			t.Errorf("runs table holds %d runs, want the 10 of the 5 remaining sessions", len(runs))
		}
		f.assertCascade(t, "s-3")
	})
}

// A session a 2.x process deletes after the copy read it, before it wrote
// its batch (the copy reads the next batch while it writes one): its runs
// are left out, as the deletion would have taken them, instead of the runs
// table's foreign key failing Up.
func TestUp_SessionDeletedBetweenReadAndWriteOfItsBatch(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		var sessions []migratetest.Session
		for i := range 8 {
			id := fmt.Sprintf("s-%d", i)
			sessions = append(sessions, legacyAgentSession(id, "["+run("run-"+id, id, "")+"]"))
		}
		f.insert(t, sessions)
		var once sync.Once
		m := f.manager(t, func(c *migrate.Config) {
			c.BatchSize = 1
			c.Progress = func(migrate.Progress) {
				once.Do(func() { f.execArgs(t, "DELETE FROM "+f.table("agno_sessions")+" WHERE session_id = ?", "s-2") })
			}
		})
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatalf("Up: %v", err)
		}
		runs := f.readRuns(t)
		if _, ok := runs["run-s-2"]; ok || len(runs) != 7 {
			t.Errorf("runs table holds %d runs (run-s-2: %v), want the 7 of the remaining sessions", len(runs), ok)
		}
	})
}
