package migrate_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// runsIndexes lists the runs table's secondary indexes by name, sorted.
func (f *fixtureDB) runsIndexes(t *testing.T) []string {
	t.Helper()
	var q string
	var args []any
	switch f.dialect {
	case sqliteName:
		q = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'agno_runs' AND sql IS NOT NULL"
	case postgresName:
		q, args = "SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'agno_runs' AND indexname <> 'agno_runs_pkey'", []any{f.layout.Schema}
	case mysqlName:
		q = "SELECT DISTINCT index_name FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'agno_runs' AND index_name <> 'PRIMARY'"
	}
	rows, err := f.db.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// agnoRunsIndexNames are the indexes Agno 3.0 creates with the runs table.
var agnoRunsIndexNames = []string{"idx_agno_runs_agent_id", "idx_agno_runs_created_at", "idx_agno_runs_run_type", "idx_agno_runs_session_id",
	"idx_agno_runs_session_id_run_index", "idx_agno_runs_status", "idx_agno_runs_team_id", "idx_agno_runs_user_id", "idx_agno_runs_workflow_id"}

// tunedRunsIndexNames are the storage layer's (docs/runs-indexes.md).
func tunedRunsIndexNames(d dialectName) []string {
	if d == mysqlName { // no partial indexes
		return []string{"idx_agno_runs_agent_id", "idx_agno_runs_created_at", "idx_agno_runs_session_id_run_index", "idx_agno_runs_status",
			"idx_agno_runs_team_id", "idx_agno_runs_user_id", "idx_agno_runs_workflow_id"}
	}
	return []string{"idx_agno_runs_agent_id_nn", "idx_agno_runs_created_at", "idx_agno_runs_session_id_run_index", "idx_agno_runs_status",
		"idx_agno_runs_team_id_nn", "idx_agno_runs_user_id_nn", "idx_agno_runs_workflow_id_nn"}
}

// TestUpDown_RunsIndexes: Up gives the runs table the storage layer's
// indexes; Down to 3.0.0 restores exactly Agno's declared ones (the layout
// an Agno-created or older Agentry database has), and Up moves such a
// database to the tuned layout again, its runs still readable.
func TestUpDown_RunsIndexes(t *testing.T) {
	onEachBackend(t, []variant{variants[1], variants[3], variants[5]}, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		f.insert(t, migratetest.Canonical())
		m := f.manager(t)
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatalf("Up: %v", err)
		}
		if got, want := f.runsIndexes(t), tunedRunsIndexNames(f.dialect); !slices.Equal(got, want) {
			t.Fatalf("after Up: indexes %v, want %v", got, want)
		}
		runs := f.readRuns(t)

		sum, err := m.Down(ctx, "3.0.0")
		if err != nil {
			t.Fatalf("Down 3.0.0: %v", err)
		}
		if got := f.runsIndexes(t); !slices.Equal(got, agnoRunsIndexNames) {
			t.Fatalf("after Down 3.0.0: indexes %v, want Agno's %v", got, agnoRunsIndexNames)
		}
		if !stepsMention(sum.Steps, "drop index idx_agno_runs_status") && !stepsMention(sum.Steps, "create index idx_agno_runs_session_id") {
			t.Errorf("Down 3.0.0 steps %+v do not report the index changes", sum.Steps)
		}

		dry := f.manager(t, func(c *migrate.Config) { c.DryRun = true })
		sum, err = dry.Up(ctx, "")
		if err != nil || !stepsMention(sum.Steps, "drop index idx_agno_runs_run_type") {
			t.Fatalf("dry-run Up = %+v, %v; want the runs index step reported", sum, err)
		}
		if got := f.runsIndexes(t); !slices.Equal(got, agnoRunsIndexNames) {
			t.Fatalf("a dry run changed the indexes: %v", got)
		}

		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatalf("Up again: %v", err)
		}
		if got, want := f.runsIndexes(t), tunedRunsIndexNames(f.dialect); !slices.Equal(got, want) {
			t.Fatalf("after Down and Up: indexes %v, want %v", got, want)
		}
		sum, err = m.Up(ctx, "")
		if err != nil || len(sum.Steps) != 0 {
			t.Fatalf("a second Up = %+v, %v; want nothing to do", sum.Steps, err)
		}
		if got := f.readRuns(t); len(got) != len(runs) {
			t.Fatalf("runs: %d after the index changes, %d before", len(got), len(runs))
		}
		d, err := f.openDriver(t)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range runs {
			if r.ParentRunID != "" {
				continue
			}
			if _, err := d.HistoryRuns(ctx, db.HistoryQuery{SessionID: r.SessionID, Limit: 3}); err != nil {
				t.Fatalf("HistoryRuns(%s): %v", r.SessionID, err)
			}
		}
		f.assertCascade(t, "s-team")
	})
}

func stepsMention(steps []migrate.Step, action string) bool {
	for _, s := range steps {
		for _, a := range s.Actions {
			if strings.Contains(a, action) {
				return true
			}
		}
	}
	return false
}
