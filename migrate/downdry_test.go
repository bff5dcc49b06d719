package migrate_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// A dry Down reports what Down does, whatever the legacy runs column holds:
// kept after Up, dropped by cleanup (Down adds it back), holding runs
// deleted after their copy, or holding values of sessions with no run left
// that are not arrays. Same counts, same steps, and no error Down does not
// give.
func TestDown_DryRunReportsWhatDownDoes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	up := func(t *testing.T, f *fixtureDB) {
		t.Helper()
		if _, err := f.manager(t).Up(ctx, ""); err != nil {
			t.Fatal(err)
		}
	}
	cleanup := func(t *testing.T, f *fixtureDB) {
		t.Helper()
		if _, err := f.manager(t).CleanupLegacyRunsColumn(ctx, migrate.CleanupOptions{Force: true, DiscardUncopiedRuns: true}); err != nil {
			t.Fatal(err)
		}
	}
	withDeleted := func(t *testing.T, f *fixtureDB) {
		t.Helper()
		f.insert(t, []migratetest.Session{
			legacyAgentSession("s-a", "["+element("run-del", "s-a", "COMPLETED", "")+", "+element("run-keep", "s-a", "COMPLETED", "")+"]"),
			legacyAgentSession("s-b", "["+element("run-only", "s-b", "COMPLETED", "")+"]"),
			legacyAgentSession("s-object", `{"not": "an array"}`),
			legacyAgentSession("s-invalid", `[{"run_id": "x"`),
		})
		up(t, f)
	}
	deleteRuns := func(t *testing.T, f *fixtureDB) {
		t.Helper()
		f.exec(t, "DELETE FROM "+f.table("agno_runs")+" WHERE run_id IN ('run-del', 'run-only')")
	}
	for _, s := range []struct {
		name  string
		setup func(t *testing.T, f *fixtureDB)
	}{
		{"column kept", func(t *testing.T, f *fixtureDB) { f.insert(t, migratetest.Canonical()); up(t, f) }},
		{"column dropped", func(t *testing.T, f *fixtureDB) { f.insert(t, migratetest.Canonical()); up(t, f); cleanup(t, f) }},
		{"deleted runs, column kept", func(t *testing.T, f *fixtureDB) { withDeleted(t, f); deleteRuns(t, f) }},
		{"deleted runs, column dropped", func(t *testing.T, f *fixtureDB) { withDeleted(t, f); cleanup(t, f); deleteRuns(t, f) }},
	} {
		for _, v := range oneOfEach {
			t.Run(s.name+"/"+v.name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, v)
				s.setup(t, f)
				dry, derr := f.manager(t, func(c *migrate.Config) { c.DryRun = true }).Down(ctx, "2.5.6")
				if derr != nil {
					t.Fatalf("dry Down: %v", derr)
				}
				sum, err := f.manager(t).Down(ctx, "2.5.6")
				if err != nil {
					t.Fatalf("Down after the dry run: %v", err)
				}
				if !dry.DryRun {
					t.Errorf("dry Down's summary does not say it is a dry run")
				}
				dry.DryRun, dry.Duration, sum.Duration = false, 0, 0
				if !reflect.DeepEqual(dry, sum) {
					t.Errorf("dry Down reported\n %+v\nDown did\n %+v", dry, sum)
				}
			})
		}
	}
}

// When Down stops (a legacy value it cannot merge into, runs of a missing
// session), its dry run stops on the same cause, but says that nothing
// changed: not that tables are at mixed versions, partly applied, or that
// runs were written back and the runs table kept.
func TestDown_DryRunThatWouldStopSaysNothingChanged(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, s := range []struct {
		name  string
		setup func(t *testing.T, f *fixtureDB)
		cause string
		is    error
	}{
		{"unreadable legacy value", func(t *testing.T, f *fixtureDB) {
			f.execArgs(t, "UPDATE "+f.table("agno_sessions")+" SET runs = ? WHERE session_id = ?",
				migratetest.Encode(string(f.dialect), []byte(`{"not": "an array"}`)), "s-a")
		}, "(s-a) holds something other than a JSON array", nil},
		{"runs of a missing session", func(t *testing.T, f *fixtureDB) {
			f.deleteSessionRowFKOff(t, "s-a")
		}, "session s-a: 1 runs (run-a)", migrate.ErrOrphanRuns},
	} {
		for _, v := range oneOfEach {
			t.Run(s.name+"/"+v.name, func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, v)
				f.insert(t, []migratetest.Session{
					legacyAgentSession("s-a", "["+run("run-a", "s-a", "")+"]"),
					legacyAgentSession("s-b", "["+run("run-b", "s-b", "")+"]"),
				})
				if _, err := f.manager(t).Up(ctx, ""); err != nil {
					t.Fatal(err)
				}
				s.setup(t, f)
				before := f.legacyColumn(t, "s-b")

				_, derr := f.manager(t, func(c *migrate.Config) { c.DryRun = true }).Down(ctx, "2.5.6")
				if derr == nil || !strings.Contains(derr.Error(), s.cause) || (s.is != nil && !errors.Is(derr, s.is)) {
					t.Fatalf("dry Down = %v, want it to stop on %q", derr, s.cause)
				}
				msg := derr.Error()
				for _, lie := range []string{"part-way", "mixed versions", "partly applied", "was kept", "kept table", "wrote back", "it resumes"} {
					if strings.Contains(msg, lie) {
						t.Errorf("dry Down's error says %q, but a dry run changes nothing: %s", lie, msg)
					}
				}
				if !strings.Contains(msg, "nothing changed") {
					t.Errorf("dry Down's error does not say nothing changed: %s", msg)
				}
				if after := f.legacyColumn(t, "s-b"); after != before {
					t.Fatalf("the dry run wrote the legacy column: %s, was %s", after, before)
				}

				_, err := f.manager(t).Down(ctx, "2.5.6")
				if err == nil || !strings.Contains(err.Error(), s.cause) || !strings.Contains(err.Error(), "part-way") {
					t.Fatalf("Down = %v, want it to stop part-way on %q", err, s.cause)
				}
			})
		}
	}
}
