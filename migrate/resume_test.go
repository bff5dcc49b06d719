package migrate_test

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/migrate/migratetest"
)

// TestUp_StoppedAfterAddingMemoriesCreatedAtStillFillsIt: an Up stopped
// right after the 2.3.0 step added memories' created_at (not stamped, the
// column there, every value NULL) fills it from updated_at when run again,
// as an Up that was not stopped does.
func TestUp_StoppedAfterAddingMemoriesCreatedAtStillFillsIt(t *testing.T) {
	var pre23 []variant
	for _, v := range variants {
		if v.stamp == "" {
			pre23 = append(pre23, v)
		}
	}
	onEachBackend(t, pre23, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, migratetest.Canonical())
		mem := f.table("agno_memories")
		ins := "INSERT INTO " + mem + " (memory_id, memory, updated_at) VALUES (?, ?, ?)"
		if f.dialect == postgresName {
			ins = "INSERT INTO " + mem + " (memory_id, memory, updated_at) VALUES ($1, $2, $3)"
		}
		for i, id := range []string{"m1", "m2"} {
			if _, err := f.db.ExecContext(ctx, ins, id, `"likes tea"`, 1_700_000_000+i); err != nil {
				t.Fatal(err)
			}
		}
		// What the stopped Up did of the step.
		if _, err := f.db.ExecContext(ctx, "ALTER TABLE "+mem+" ADD COLUMN created_at BIGINT"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatalf("Up: %v", err)
		}
		var nulls, wrong int
		if err := f.db.QueryRowContext(ctx, "SELECT count(*) FROM "+mem+" WHERE created_at IS NULL").Scan(&nulls); err != nil {
			t.Fatal(err)
		}
		if err := f.db.QueryRowContext(ctx, "SELECT count(*) FROM "+mem+" WHERE created_at <> updated_at").Scan(&wrong); err != nil {
			t.Fatal(err)
		}
		if nulls != 0 || wrong != 0 {
			t.Errorf("after Up: %d memories without created_at, %d with one other than updated_at; want every one filled from updated_at", nulls, wrong)
		}
	})
}
