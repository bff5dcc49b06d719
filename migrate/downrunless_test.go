package migrate_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// Down's pass over sessions the runs table holds no run of (each here with
// one run deleted after its copy) reads them BatchSize at a time, however
// many there are, reporting progress after each batch, and leaves every
// deleted run out.
func TestDown_SessionsWithoutRunsAreRebuiltInBatches(t *testing.T) {
	t.Parallel()
	const sessions, batch = 3000, 100
	ctx := context.Background()
	f := newFixture(t, variants[0]) // sqlite
	var ss []migratetest.Session
	for i := range sessions {
		sid := fmt.Sprintf("s-%05d", i)
		ss = append(ss, legacyAgentSession(sid, "["+element("run-"+sid, sid, "COMPLETED", "")+"]"))
	}
	f.insert(t, ss)
	if _, err := f.manager(t, func(c *migrate.Config) { c.BatchSize = 500 }).Up(ctx, ""); err != nil {
		t.Fatal(err)
	}
	f.exec(t, "DELETE FROM "+f.table("agno_runs"))

	var steps []int64
	m := f.manager(t, func(c *migrate.Config) {
		c.BatchSize = batch
		c.Progress = func(p migrate.Progress) {
			if strings.Contains(p.Step, "without runs") {
				steps = append(steps, p.SessionsDone)
			}
		}
	})
	sum, err := m.Down(ctx, "2.5.6")
	if err != nil || sum.SessionsRebuilt != sessions || sum.DeletedRunsLeftOut != sessions {
		t.Fatalf("Down = %+v, %v; want %d sessions rebuilt, each leaving its deleted run out", sum, err, sessions)
	}
	if len(steps) < sessions/batch {
		t.Fatalf("the pass reported %d batches, want at least %d of at most %d sessions", len(steps), sessions/batch, batch)
	}
	prev := int64(0)
	for _, done := range steps {
		if n := done - prev; n < 1 || n > batch {
			t.Fatalf("a batch held %d sessions, want 1..%d (progress %v)", n, batch, steps)
		}
		prev = done
	}
	if prev != sessions {
		t.Fatalf("the pass visited %d sessions, want %d", prev, sessions)
	}
	var left int
	if err := f.db.QueryRow("SELECT count(*) FROM " + f.table("agno_sessions") + " WHERE runs LIKE '%run-s-%'").Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d sessions still hold their deleted run (%v)", left, err)
	}
}
