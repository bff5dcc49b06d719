package migrate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// deleteSessionRowFKOff deletes a session row with foreign key checks off,
// as a 2.x process on SQLite (which never turns them on) does: its runs stay.
func (f *fixtureDB) deleteSessionRowFKOff(t *testing.T, sessionID string) {
	t.Helper()
	ctx := context.Background()
	c, err := f.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stmts := map[dialectName][2]string{
		sqliteName:   {"PRAGMA foreign_keys = OFF", "PRAGMA foreign_keys = ON"},
		postgresName: {"SET session_replication_role = replica", "SET session_replication_role = DEFAULT"},
		mysqlName:    {"SET FOREIGN_KEY_CHECKS = 0", "SET FOREIGN_KEY_CHECKS = 1"},
	}[f.dialect]
	del := "DELETE FROM " + f.table("agno_sessions") + " WHERE session_id = '" + sessionID + "'"
	for _, q := range []string{stmts[0], del, stmts[1]} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// Down never drops runs whose session row is gone (deleted with foreign
// keys off): it writes every other session's runs back, keeps the runs
// table, and says which sessions and runs and what to do, in a dry run too.
// Once the user deals with them, down completes.
func TestDown_RunsOfAMissingSessionStopDownWithTheirNames(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{
			legacyAgentSession("s-gone", "["+run("run-g1", "s-gone", "")+", "+run("run-g2", "s-gone", "")+"]"),
			legacyAgentSession("s-kept", "["+run("run-k1", "s-kept", "")+"]"),
		})
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		res, err := f.manager(t).CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true})
		if err != nil || !res.Dropped {
			t.Fatalf("cleanup = %+v, %v", res, err)
		}
		f.deleteSessionRowFKOff(t, "s-gone")

		for _, dry := range []bool{true, false} {
			m := f.manager(t, func(c *migrate.Config) { c.DryRun = dry })
			_, err := m.Down(ctx, "2.5.6")
			if !errors.Is(err, migrate.ErrOrphanRuns) {
				t.Fatalf("down (dry run %v) = %v, want ErrOrphanRuns", dry, err)
			}
			for _, want := range []string{"s-gone", "2 runs", "run-g1", "run-g2", "agno_runs", "run down again"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("down (dry run %v) error %q does not name %q", dry, err, want)
				}
			}
		}
		if got := len(f.readRuns(t)); got != 3 {
			t.Fatalf("runs table holds %d runs after the refused down, want all 3", got)
		}
		var legacy string
		if err := f.db.QueryRow("SELECT runs FROM " + f.table("agno_sessions") + " WHERE session_id = 's-kept'").Scan(&legacy); err != nil || !strings.Contains(legacy, "run-k1") {
			t.Fatalf("s-kept's legacy runs = %q, %v; want run-k1 written back", legacy, err)
		}

		f.exec(t, "DELETE FROM "+f.table("agno_runs")+" WHERE session_id = 's-gone'")
		if _, err := f.manager(t).Down(ctx, "2.5.6"); err != nil {
			t.Fatalf("down after the orphans were removed: %v", err)
		}
	})
}
