package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

func statusOf(t testing.TB, m *migrate.Manager, kind string) migrate.TableStatus {
	t.Helper()
	sts, err := m.Status(context.Background())
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	for _, s := range sts {
		if s.Kind == kind {
			return s
		}
	}
	t.Fatalf("no status for %s", kind)
	return migrate.TableStatus{}
}

// TestUpDownUp_PreservesEveryRunOfTheCanonicalFixture migrates each 2.x
// layout, checks the runs table row by row against the legacy arrays, goes
// down (rebuilding the legacy column) and up again, then cleans up.
func TestUpDownUp_PreservesEveryRunOfTheCanonicalFixture(t *testing.T) {
	onEachBackend(t, variants, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		sessions := migratetest.CanonicalFor(f.layout)
		f.insert(t, sessions)
		want, wantBad := expectedRowsFor(t, f.layout, sessions)
		m := f.manager(t)

		st := statusOf(t, m, migrate.KindSessions)
		wantCur := "2.0.0"
		if f.layout.Stamp != "" {
			wantCur = f.layout.Stamp
		}
		if st.Current != wantCur || !st.LegacyRunsColumn || st.UpToDate() || st.Pending[len(st.Pending)-1] != "3.0.0" {
			t.Fatalf("status before Up = %+v", st)
		}
		// SQL NULL and JSON null do not count; [] and the broken rows do.
		if st.RowsWithRuns != int64(len(sessions)-2) {
			t.Errorf("RowsWithRuns = %d, want %d", st.RowsWithRuns, len(sessions)-2)
		}

		sum, err := m.Up(ctx, "")
		if err != nil {
			t.Fatalf("Up: %v", err)
		}
		compareRuns(t, f.readRuns(t), want)
		if sum.RunsCopied != int64(len(want)) {
			t.Errorf("Summary.RunsCopied = %d, want %d", sum.RunsCopied, len(want))
		}
		var gotBad []string
		for _, b := range sum.BadRows {
			gotBad = append(gotBad, fmt.Sprintf("%s@%d", b.SessionID, b.Position))
		}
		var expBad []string
		for _, b := range wantBad {
			expBad = append(expBad, fmt.Sprintf("%s@%d", b.SessionID, b.Position))
		}
		slices.Sort(gotBad)
		slices.Sort(expBad)
		if !slices.Equal(gotBad, expBad) || sum.BadRowCount != int64(len(wantBad)) {
			t.Errorf("bad rows = %v (count %d), want %v", gotBad, sum.BadRowCount, expBad)
		}
		for _, b := range sum.BadRows {
			if b.SessionID == "s-nul" && (b.Kind != "nul_character" || !strings.Contains(b.Detail, "U+0000")) {
				t.Errorf("run holding U+0000 recorded as %+v, want kind nul_character naming U+0000", b)
			}
		}
		var errRows int
		if err := f.db.QueryRow("SELECT count(*) FROM " + f.table("agno_migration_errors")).Scan(&errRows); err != nil || errRows != len(wantBad) {
			t.Errorf("errors table holds %d rows (%v), want %d", errRows, err, len(wantBad))
		}
		sts, err := m.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range sts {
			if !s.Exists || s.Current != migrate.Latest || !s.UpToDate() {
				t.Errorf("after Up: %+v", s)
			}
		}
		// The legacy column is a frozen backup: still there, still full.
		if st := statusOf(t, m, migrate.KindSessions); !st.LegacyRunsColumn || st.RowsWithRuns != int64(len(sessions)-2) {
			t.Errorf("legacy column after Up = %+v", st)
		}

		// Up again is a no-op.
		sum, err = m.Up(ctx, "")
		if err != nil || len(sum.Steps) != 0 || sum.RunsCopied != 0 {
			t.Fatalf("second Up = %+v, %v", sum, err)
		}

		// Down rebuilds the column and drops the table; Up again restores the rows.
		if _, err := m.Down(ctx, "2.5.6"); err != nil {
			t.Fatalf("Down: %v", err)
		}
		if st := statusOf(t, m, migrate.KindSessions); st.Current != "2.5.6" || !st.LegacyRunsColumn {
			t.Fatalf("after Down: %+v", st)
		}
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatalf("Up after Down: %v", err)
		}
		compareRuns(t, f.readRuns(t), want)

		// Cleanup refuses while the column holds runs the table lacks (the
		// bad rows), with or without force; it drops them only when told
		// to discard them, then reports gone.
		for _, force := range []bool{false, true} {
			res, err := m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: force})
			if !errors.Is(err, migrate.ErrUncopiedRuns) || res.UncopiedRuns != int64(len(wantBad)) {
				t.Fatalf("cleanup (force %v) = %+v, %v; want ErrUncopiedRuns for the %d bad rows", force, res, err, len(wantBad))
			}
		}
		res, err := m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true, DiscardUncopiedRuns: true})
		if err != nil || !res.Dropped || res.AlreadyGone {
			t.Fatalf("cleanup with force = %+v, %v", res, err)
		}
		res, err = m.CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{})
		if err != nil || !res.AlreadyGone {
			t.Fatalf("cleanup again = %+v, %v", res, err)
		}
		compareRuns(t, f.readRuns(t), want)
		if _, err := m.Status(ctx); err != nil {
			t.Fatalf("Status after cleanup: %v", err)
		}

		// Down after cleanup restores the column from the table alone.
		if _, err := m.Down(ctx, "2.5.6"); err != nil {
			t.Fatalf("Down after cleanup: %v", err)
		}
		if st := statusOf(t, m, migrate.KindSessions); !st.LegacyRunsColumn || st.RowsWithRuns == 0 {
			t.Fatalf("after Down: %+v", st)
		}
		merged, err := m.MergedSessionRuns(ctx, "s-team")
		if err != nil || len(merged) != 3 || merged[2].RunID != "run-t1" {
			t.Fatalf("rebuilt s-team runs = %v, %v", merged, err)
		}
		sum, err = m.Up(ctx, "")
		if err != nil || sum.RunsCopied != int64(len(want)) || sum.BadRowCount != 0 {
			t.Fatalf("Up after cleanup and Down = %+v, %v", sum, err)
		}

		f.assertRunsIndexed(t)
		f.assertCascade(t, "s-team")
	})
}

// assertCascade checks the runs table's foreign key is in place: deleting a
// session deletes its runs.
func (f *fixtureDB) assertCascade(t *testing.T, sessionID string) {
	t.Helper()
	var before int
	count := "SELECT count(*) FROM " + f.table("agno_runs") + " WHERE session_id = '" + sessionID + "'"
	if err := f.db.QueryRow(count).Scan(&before); err != nil || before == 0 {
		t.Fatalf("session %s has %d runs (%v); pick one with runs", sessionID, before, err)
	}
	if _, err := f.db.Exec("DELETE FROM " + f.table("agno_sessions") + " WHERE session_id = '" + sessionID + "'"); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := f.db.QueryRow(count).Scan(&left); err != nil || left != 0 {
		t.Errorf("runs of deleted session %s left: %d of %d (%v): the runs foreign key is missing", sessionID, left, before, err)
	}
}

// assertRunsIndexed checks the runs table has its (session_id, run_index)
// index, the last the DDL creates.
func (f *fixtureDB) assertRunsIndexed(t *testing.T) {
	t.Helper()
	const name = "idx_agno_runs_session_id_run_index"
	var q string
	args := []any{name}
	switch f.dialect {
	case sqliteName:
		q = "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?"
	case postgresName:
		q, args = "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname = $2", []any{f.layout.Schema, name}
	case mysqlName:
		q = "SELECT count(DISTINCT index_name) FROM information_schema.statistics WHERE table_schema = DATABASE() AND index_name = ?"
	}
	var n int
	if err := f.db.QueryRow(q, args...).Scan(&n); err != nil || n != 1 {
		t.Errorf("index %s: found %d (%v)", name, n, err)
	}
}
