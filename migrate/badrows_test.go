package migrate_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// oneOfEach is a variant per dialect.
var oneOfEach = []variant{variants[0], variants[3], variants[4]}

func legacyAgentSession(id, runs string) migratetest.Session {
	return migratetest.Session{SessionID: id, SessionType: "agent", AgentID: "a1", CreatedAt: 1_700_000_000, Runs: []byte(runs)}
}

// execArgs runs a statement with "?" placeholders on the fixture's database.
func (f *fixtureDB) execArgs(t *testing.T, q string, args ...any) {
	t.Helper()
	if f.dialect == postgresName {
		for i := 1; strings.Contains(q, "?"); i++ {
			q = strings.Replace(q, "?", "$"+string(rune('0'+i)), 1)
		}
	}
	if _, err := f.db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// A resumed Up reports the bad rows an interrupted attempt recorded, and
// keeps reporting them while they are bad; once the row is fixed, Up copies
// its run and the record goes. A dry run reports without writing.
func TestUp_BadRowsOfEarlierAttemptsAreReportedUntilFixed(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{
			legacyAgentSession("a-bad", `[{"run_id": "run-x", "content": "trunc`),
			legacyAgentSession("b-ok", `[{"run_id": "run-b", "agent_id": "a1", "session_id": "b-ok"}]`),
			legacyAgentSession("c-ok", `[{"run_id": "run-c", "agent_id": "a1", "session_id": "c-ok"}]`),
		})
		cctx, cancel := context.WithCancel(ctx)
		first := f.manager(t, func(c *migrate.Config) { c.BatchSize = 1; c.Progress = func(migrate.Progress) { cancel() } })
		if _, err := first.Up(cctx, ""); err == nil {
			t.Fatal("the interrupted attempt finished")
		}
		m := f.manager(t)
		if st := statusOf(t, m, migrate.KindSessions); st.BadRowsRecorded != 1 || st.CopyCheckpoint != "a-bad" {
			t.Fatalf("status after the interrupted attempt = %+v, want 1 recorded bad row and a checkpoint", st)
		}
		for i := range 2 {
			sum, err := m.Up(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if sum.BadRowCount != 1 || len(sum.BadRows) != 1 || sum.BadRows[0].SessionID != "a-bad" || sum.SessionsRechecked != 1 {
				t.Fatalf("Up #%d = %+v, want the earlier attempt's bad row reported", i+1, sum)
			}
			if want := int64(2 * (1 - i)); sum.RunsCopied != want {
				t.Errorf("Up #%d copied %d runs, want %d", i+1, sum.RunsCopied, want)
			}
		}

		f.execArgs(t, "UPDATE "+f.table("agno_sessions")+" SET runs = ? WHERE session_id = ?",
			migratetest.Encode(string(f.dialect), []byte(`[{"run_id": "run-x", "agent_id": "a1", "session_id": "a-bad"}]`)), "a-bad")
		dry, err := f.manager(t, func(c *migrate.Config) { c.DryRun = true }).Up(ctx, "")
		if err != nil || dry.BadRowCount != 0 || dry.SessionsRechecked != 1 {
			t.Fatalf("dry run after the fix = %+v, %v", dry, err)
		}
		if st := statusOf(t, m, migrate.KindSessions); st.BadRowsRecorded != 1 {
			t.Fatalf("the dry run changed the records: %+v", st)
		}
		sum, err := m.Up(ctx, "")
		if err != nil || sum.BadRowCount != 0 || sum.RunsCopied != 1 {
			t.Fatalf("Up after the fix = %+v, %v; want the fixed run copied and no bad rows", sum, err)
		}
		if _, ok := f.readRuns(t)["run-x"]; !ok {
			t.Error("run-x was not copied")
		}
		if st := statusOf(t, m, migrate.KindSessions); st.BadRowsRecorded != 0 {
			t.Errorf("status after the fix = %+v, want no recorded bad rows", st)
		}
	})
}

// Down below 2.5.0 refuses before it changes anything: it never stamps a
// version whose shape it does not restore.
func TestDown_BelowTheLowestTargetRefusesAndChangesNothing(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		m, want := f.migrateCanonical(t)
		for _, to := range []string{"2.3.0", "2.0.0"} {
			sum, err := m.Down(ctx, to)
			if !errors.Is(err, migrate.ErrCannotRestore) || sum != nil {
				t.Fatalf("Down(%s) = %+v, %v; want ErrCannotRestore", to, sum, err)
			}
		}
		sts, err := m.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range sts {
			if st.Current != migrate.Latest {
				t.Errorf("%s is at %s after a refused Down", st.Table, st.Current)
			}
		}
		compareRuns(t, f.readRuns(t), want)
		if _, err := m.Down(ctx, migrate.LowestDownTarget); err != nil {
			t.Errorf("Down(%s): %v", migrate.LowestDownTarget, err)
		}
	})
}

// Down counts what it rebuilt: the sessions whose runs column it wrote and
// the runs it wrote back; a dry run counts the same without writing.
func TestDown_CountsTheSessionsItRebuilds(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		m, want := f.migrateCanonical(t)
		withRuns := map[string]bool{}
		for _, r := range want {
			withRuns[r.SessionID] = true
		}
		dry, err := f.manager(t, func(c *migrate.Config) { c.DryRun = true }).Down(ctx, "2.5.6")
		if err != nil || dry.SessionsRebuilt != int64(len(withRuns)) || dry.RunsRestored != int64(len(want)) {
			t.Fatalf("dry Down = %+v, %v; want %d sessions, %d runs", dry, err, len(withRuns), len(want))
		}
		compareRuns(t, f.readRuns(t), want)
		sum, err := m.Down(ctx, "2.5.6")
		if err != nil || sum.SessionsRebuilt != int64(len(withRuns)) || sum.RunsRestored != int64(len(want)) || sum.RunsCopied != 0 {
			t.Fatalf("Down = %+v, %v; want %d sessions, %d runs", sum, err, len(withRuns), len(want))
		}
	})
}

// Down keeps the runs table when a session's legacy column holds something
// it cannot merge into: dropping the table would lose that session's runs.
func TestDown_KeepsTheRunsTableWhenALegacyColumnIsUnreadable(t *testing.T) {
	onEachBackend(t, oneOfEach, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		m, want := f.migrateCanonical(t)
		f.execArgs(t, "UPDATE "+f.table("agno_sessions")+" SET runs = ? WHERE session_id = ?",
			migratetest.Encode(string(f.dialect), []byte(`{"not": "an array"}`)), "s-agent")
		_, err := m.Down(ctx, "2.5.6")
		if err == nil || !strings.Contains(err.Error(), "s-agent") {
			t.Fatalf("Down = %v, want an error naming s-agent", err)
		}
		compareRuns(t, f.readRuns(t), want)
		if st := statusOf(t, m, migrate.KindSessions); st.Current != migrate.Latest {
			t.Errorf("sessions stamped %s after the stopped Down", st.Current)
		}
	})
}

// migrateCanonical fills the fixture with the canonical 2.x sessions and
// migrates it up with the manager it returns; want is the runs table after
// Up.
func (f *fixtureDB) migrateCanonical(t *testing.T) (m *migrate.Manager, want map[string]runRow) {
	t.Helper()
	f.insert(t, migratetest.Canonical())
	m = f.manager(t)
	if _, err := m.Up(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	return m, f.readRuns(t)
}

// A run that Agno's SQLite writer stored with a float that is not finite
// (Python's json writes NaN and Infinity, which JSON has no words for) was a
// bad row of kind invalid_json, and its whole session's runs stayed behind;
// they are copied now, such a float read as null, as the stores read it.
func TestUp_CopiesRunsWithNonFiniteFloatsAsSQLiteHoldsThem(t *testing.T) {
	onEachBackend(t, []variant{variants[0], variants[1]}, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, []migratetest.Session{
			legacyAgentSession("s-nan", `[{"run_id": "run-nan", "agent_id": "a1", "session_id": "s-nan", "content": "NaN as text",`+
				` "metrics": {"duration": NaN, "time_to_first_token": Infinity, "cost": -Infinity}},`+
				` {"run_id": "run-fine", "agent_id": "a1", "session_id": "s-nan"}]`),
		})
		sum, err := f.manager(t).Up(ctx, "")
		if err != nil || sum.BadRowCount != 0 || sum.RunsCopied != 2 {
			t.Fatalf("Up = %+v, %v; want both runs copied, no bad row", sum, err)
		}
		row, ok := f.readRuns(t)["run-nan"]
		data, _ := row.Data.(map[string]any)
		metrics, _ := data["metrics"].(map[string]any)
		if !ok || data["content"] != "NaN as text" || metrics == nil || metrics["duration"] != nil || len(metrics) != 3 {
			t.Errorf("run-nan = %+v", row)
		}
	})
}
