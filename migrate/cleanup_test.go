package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// setLegacyRuns writes a session's legacy runs column as a 2.x process
// still running next to Agentry would.
func (f *fixtureDB) setLegacyRuns(t *testing.T, sessionID, runs string) {
	t.Helper()
	f.execArgs(t, "UPDATE "+f.table("agno_sessions")+" SET runs = ? WHERE session_id = ?",
		migratetest.Encode(string(f.dialect), []byte(runs)), sessionID)
}

// runStatus reads one run's status column (empty when the run is missing).
func (f *fixtureDB) runStatus(t *testing.T, runID string) string {
	t.Helper()
	r, ok := f.readRuns(t)[runID]
	if !ok {
		return ""
	}
	return r.Status
}

func run(id, session, extra string) string {
	return `{"run_id": "` + id + `", "agent_id": "a1", "session_id": "` + session + `", "status": "COMPLETED"` + extra + `}`
}

// Cleanup never drops legacy runs the runs table does not hold: rows Up
// skipped as bad, and runs a 2.x process wrote after Up. --force (which
// drops the backup of copied runs) refuses too; only the explicit discard
// option drops them, and a dry run says how many it would.
func TestCleanup_RefusesToDropRunsNotInTheRunsTable(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{
			legacyAgentSession("s-bad", `[{"run_id": "run-x", "content": "trunc`),
			legacyAgentSession("s-ok", "["+run("run-1", "s-ok", "")+"]"),
		})
		m := f.manager(t)
		if sum, err := m.Up(ctx, ""); err != nil || sum.BadRowCount != 1 {
			t.Fatalf("Up = %+v, %v; want one bad row", sum, err)
		}
		f.setLegacyRuns(t, "s-ok", "["+run("run-1", "s-ok", "")+", "+run("run-late", "s-ok", "")+"]")

		for _, opts := range []migrate.CleanupOptions{{}, {Force: true}} {
			res, err := m.CleanupLegacyRunsColumn(ctx, opts)
			if !errors.Is(err, migrate.ErrUncopiedRuns) || res == nil || res.UncopiedRuns != 2 || res.UncopiedSessions != 2 || res.Dropped {
				t.Fatalf("cleanup %+v = %+v, %v; want ErrUncopiedRuns for 2 runs in 2 sessions", opts, res, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "2 legacy runs") || !strings.Contains(msg, "2 sessions") || !strings.Contains(msg, "migrate up") {
				t.Errorf("error %q does not say how many and what to run", msg)
			}
		}
		if st := statusOf(t, m, migrate.KindSessions); !st.LegacyRunsColumn || st.UncopiedRuns != 2 {
			t.Fatalf("status after refused cleanups = %+v; want the column kept and 2 uncopied runs", st)
		}

		// Up copies the late run; the bad row still blocks.
		if sum, err := m.Up(ctx, ""); err != nil || sum.RunsCopied != 1 {
			t.Fatalf("second Up = %+v, %v; want the late run copied", sum, err)
		}
		res, err := m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true})
		if !errors.Is(err, migrate.ErrUncopiedRuns) || res.UncopiedRuns != 1 || res.UncopiedSessions != 1 {
			t.Fatalf("cleanup after the second Up = %+v, %v; want 1 uncopied run in 1 session", res, err)
		}

		dry := f.manager(t, func(c *migrate.Config) { c.DryRun = true })
		res, err = dry.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true, DiscardUncopiedRuns: true})
		if err != nil || res.Dropped || res.UncopiedRuns != 1 {
			t.Fatalf("dry cleanup with discard = %+v, %v", res, err)
		}
		if st := statusOf(t, m, migrate.KindSessions); !st.LegacyRunsColumn {
			t.Fatal("the dry run dropped the column")
		}
		// Discarding needs force as well: it only widens what force drops.
		if _, err := m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{DiscardUncopiedRuns: true}); err == nil || !strings.Contains(err.Error(), "--force") {
			t.Fatalf("discard without force = %v, want an error asking for --force", err)
		}
		res, err = m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true, DiscardUncopiedRuns: true})
		if err != nil || !res.Dropped || res.UncopiedRuns != 1 {
			t.Fatalf("cleanup with discard = %+v, %v", res, err)
		}
		for _, id := range []string{"run-1", "run-late"} {
			if f.runStatus(t, id) == "" {
				t.Errorf("%s missing from the runs table after cleanup", id)
			}
		}
	})
}

// Runs a 2.x process writes into the legacy column after Up (a new run in
// a migrated session, a new session) are seen by Status and copied by the
// next Up, exactly once; a run Agentry changed since is never overwritten
// by its (unchanged) legacy copy.
func TestUp_CopiesLegacyRunsWrittenAfterMigration(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{legacyAgentSession("s-a", "["+run("run-a1", "s-a", "")+"]")})
		m := f.manager(t)
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		// Agentry continues run-a1 (its writes set updated_at to now);
		// the 2.x process keeps writing, its copy of run-a1 unchanged.
		f.execArgs(t, "UPDATE "+f.table("agno_runs")+" SET status = ?, updated_at = updated_at + 60 WHERE run_id = ?", "CANCELLED", "run-a1")
		f.setLegacyRuns(t, "s-a", "["+run("run-a1", "s-a", "")+", "+run("run-a2", "s-a", "")+"]")
		f.insert(t, []migratetest.Session{legacyAgentSession("s-c", "["+run("run-c1", "s-c", "")+"]")})

		if st := statusOf(t, m, migrate.KindSessions); st.UncopiedRuns != 2 || st.UncopiedSessions != 2 {
			t.Fatalf("status = %+v; want 2 uncopied runs in 2 sessions", st)
		}
		dry, err := f.manager(t, func(c *migrate.Config) { c.DryRun = true }).Up(ctx, "")
		if err != nil || dry.RunsCopied != 2 {
			t.Fatalf("dry Up = %+v, %v; want 2 runs to copy", dry, err)
		}
		sum, err := m.Up(ctx, "")
		if err != nil || sum.RunsCopied != 2 || sum.BadRowCount != 0 {
			t.Fatalf("Up after 2.x writes = %+v, %v; want 2 runs copied", sum, err)
		}
		runs := f.readRuns(t)
		if r, ok := runs["run-a2"]; !ok || r.RunIndex != 1 || r.SessionID != "s-a" {
			t.Errorf("run-a2 = %+v, %v; want it at index 1 of s-a", r, ok)
		}
		if _, ok := runs["run-c1"]; !ok {
			t.Error("run-c1 of the new session was not copied")
		}
		if s := runs["run-a1"].Status; s != "CANCELLED" {
			t.Errorf("run-a1 status = %q: the legacy copy overwrote the runs table's row", s)
		}
		if sum, err := m.Up(ctx, ""); err != nil || sum.RunsCopied != 0 {
			t.Fatalf("third Up = %+v, %v; want nothing to copy", sum, err)
		}
		if st := statusOf(t, m, migrate.KindSessions); st.UncopiedRuns != 0 {
			t.Errorf("status after Up = %+v; want nothing uncopied", st)
		}
	})
}

// A run written to a session the interrupted copy had passed is copied by
// the resumed Up.
func TestUp_ResumedCopySeesRunsAddedBeforeItsCheckpoint(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{
			legacyAgentSession("s-a", "["+run("run-a1", "s-a", "")+"]"),
			legacyAgentSession("s-b", "["+run("run-b1", "s-b", "")+"]"),
		})
		cctx, cancel := context.WithCancel(ctx)
		first := f.manager(t, func(c *migrate.Config) { c.BatchSize = 1; c.Progress = func(migrate.Progress) { cancel() } })
		if _, err := first.Up(cctx, ""); err == nil {
			t.Fatal("the interrupted attempt finished")
		}
		f.setLegacyRuns(t, "s-a", "["+run("run-a1", "s-a", "")+", "+run("run-a2", "s-a", "")+"]")
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
		runs := f.readRuns(t)
		for _, id := range []string{"run-a1", "run-a2", "run-b1"} {
			if _, ok := runs[id]; !ok {
				t.Errorf("%s not copied by the resumed Up", id)
			}
		}
	})
}

// The same run_id in two sessions cannot be two rows of the runs table: the
// second is a recorded bad row (not a silent skip), and cleanup keeps it.
func TestUp_RunIDInTwoSessionsIsABadRow(t *testing.T) {
	t.Parallel()
	for _, v := range oneOfEach {
		for _, batch := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/batch%d", v.name, batch), func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				f := newFixture(t, v)
				f.insert(t, []migratetest.Session{
					legacyAgentSession("s-a", "["+run("run-x", "s-a", `, "content": "in a"`)+"]"),
					legacyAgentSession("s-b", "["+run("run-y", "s-b", "")+", "+run("run-x", "s-b", `, "content": "in b"`)+"]"),
				})
				// Batches of 1 and 2: the sessions in two batches, then in one.
				m := f.manager(t, func(c *migrate.Config) { c.BatchSize = batch })
				sum, err := m.Up(ctx, "")
				if err != nil || sum.BadRowCount != 1 || len(sum.BadRows) != 1 {
					t.Fatalf("Up = %+v, %v; want one bad row", sum, err)
				}
				if b := sum.BadRows[0]; b.SessionID != "s-b" || b.Position != 1 || b.Kind != migrate.BadRunIDConflict || !strings.Contains(b.Detail, "s-a") {
					t.Errorf("bad row = %+v; want s-b #1 %s naming s-a", b, migrate.BadRunIDConflict)
				}
				if r := f.readRuns(t)["run-x"]; r.SessionID != "s-a" {
					t.Errorf("run-x belongs to %q, want s-a", r.SessionID)
				}
				if _, err := m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true}); !errors.Is(err, migrate.ErrUncopiedRuns) {
					t.Errorf("cleanup = %v, want ErrUncopiedRuns", err)
				}
			})
		}
	}
}

// On MySQL/MariaDB run ids that differ only in case are two runs: the runs
// table's keys compare in binary (utf8mb4_bin), whatever the 2.x sessions
// table's collation was.
func TestUp_MySQLRunIDsDifferingInCaseAreTwoRuns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t, variants[4])
	f.insert(t, []migratetest.Session{
		legacyAgentSession("s-a", "["+run("Run-A", "s-a", "")+"]"),
		legacyAgentSession("s-b", "["+run("run-a", "s-b", "")+"]"),
	})
	m := f.manager(t)
	sum, err := m.Up(ctx, "")
	if err != nil || sum.RunsCopied != 2 || sum.BadRowCount != 0 {
		t.Fatalf("Up = %+v, %v; want both runs copied", sum, err)
	}
	if st := statusOf(t, m, migrate.KindSessions); st.UncopiedRuns != 0 {
		t.Errorf("status = %+v; want every run copied", st)
	}
}

// The copy's records of two MySQL run ids that differ only in case are two
// records: Agentry writing one of the runs is no conflict, and deleting the
// other keeps it deleted. A records table an earlier release made with the
// server's case-insensitive collation is converted.
func TestUp_MySQLCopyRecordsOfRunIDsDifferingInCase(t *testing.T) {
	t.Parallel()
	for _, earlier := range []bool{false, true} {
		t.Run(fmt.Sprintf("earlier_records_table=%v", earlier), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t, variants[4])
			f.insert(t, []migratetest.Session{
				legacyAgentSession("s-a", "["+run("Run-A", "s-a", "")+"]"),
				legacyAgentSession("s-b", "["+run("run-a", "s-b", `, "content": "b"`)+"]"),
			})
			if earlier {
				f.exec(t, "CREATE TABLE agno_migration_copied_runs (run_id VARCHAR(255) NOT NULL PRIMARY KEY, digest BIGINT NOT NULL, updated_at BIGINT NOT NULL) DEFAULT CHARSET=utf8mb4")
			}
			m := f.manager(t)
			if sum, err := m.Up(ctx, ""); err != nil || sum.RunsCopied != 2 {
				t.Fatalf("Up = %+v, %v; want both runs copied", sum, err)
			}
			f.agentryWrites(t, "Run-A", "CANCELLED", run("Run-A", "s-a", `, "content": "agentry"`))
			f.execArgs(t, "DELETE FROM "+f.table("agno_runs")+" WHERE run_id = CAST(? AS BINARY)", "run-a")
			if st := statusOf(t, m, migrate.KindSessions); st.UncopiedRuns != 0 {
				t.Errorf("status = %+v; want nothing uncopied", st.Uncopied)
			}
			sum, err := m.Up(ctx, "")
			if err != nil || sum.BadRowCount != 0 || sum.RunsCopied != 0 || sum.RunsRecopied != 0 {
				t.Fatalf("Up = %+v, %v; want nothing to copy and no conflict", sum, err)
			}
			runs := f.readRuns(t)
			if r := runs["Run-A"]; r.Status != "CANCELLED" {
				t.Errorf("Run-A = %+v; want Agentry's write kept", r)
			}
			if _, ok := runs["run-a"]; ok {
				t.Error("the deleted run-a was copied back")
			}
		})
	}
}

// A dry run reports a run_id shared by two sessions as Up does, whether or
// not the sessions land in one batch: it found the conflict only within a
// batch, so with the sessions in two it planned to copy both runs and
// reported no bad row, where Up then copies one and records the other.
func TestUp_DryRunSeesARunIDInTwoSessionsAcrossBatches(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{
			legacyAgentSession("s-a", "["+run("run-x", "s-a", `, "content": "in a"`)+"]"),
			legacyAgentSession("s-b", "["+run("run-y", "s-b", "")+", "+run("run-x", "s-b", `, "content": "in b"`)+"]"),
			legacyAgentSession("s-c", "["+run("run-z", "s-c", "")+"]"),
		})
		for _, batch := range []int{1, 2, 3} {
			dry, err := f.manager(t, func(c *migrate.Config) { c.BatchSize, c.DryRun = batch, true }).Up(ctx, "")
			if err != nil || dry.RunsCopied != 3 || dry.BadRowCount != 1 || len(dry.BadRows) != 1 ||
				dry.BadRows[0].SessionID != "s-b" || dry.BadRows[0].Kind != migrate.BadRunIDConflict || !strings.Contains(dry.BadRows[0].Detail, "s-a") {
				t.Fatalf("dry run in batches of %d = %+v, %v; want 3 runs to copy and run-x of s-b a conflict with s-a", batch, dry, err)
			}
		}
		sum, err := f.manager(t, func(c *migrate.Config) { c.BatchSize = 1 }).Up(ctx, "")
		if err != nil || sum.RunsCopied != 3 || sum.BadRowCount != 1 {
			t.Fatalf("Up = %+v, %v; want what the dry run said", sum, err)
		}
	})
}
