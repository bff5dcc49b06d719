package migrate_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// openDriver opens the fixture through the 3.0 storage driver of its dialect.
func (f *fixtureDB) openDriver(t *testing.T) (*db.DB, error) {
	t.Helper()
	return f.openDriverTables(t, migrate.Tables{})
}

// openDriverTables opens the fixture through its dialect's driver with the
// given table names.
func (f *fixtureDB) openDriverTables(t *testing.T, tables migrate.Tables) (*db.DB, error) {
	t.Helper()
	ctx := context.Background()
	var d *db.DB
	var err error
	switch f.dialect {
	case sqliteName:
		d, err = sqlite.Open(ctx, sqlite.Config{Path: f.path, Tables: tables})
	case postgresName:
		d, err = postgres.Open(ctx, postgres.Config{DSN: f.dsn, Schema: f.layout.Schema, Tables: tables})
	case mysqlName:
		d, err = mysql.Open(ctx, mysql.Config{DSN: f.dsn, Tables: tables})
	}
	if err == nil {
		t.Cleanup(func() { d.Close() })
	}
	return d, err
}

// TestDrivers_ReadMigratedRunsUnchanged: a 2.x database is refused by the
// driver with ErrMigrationRequired; after Up the driver's GetRuns returns
// every run with the legacy element's data; merged reads agree until cleanup.
func TestDrivers_ReadMigratedRunsUnchanged(t *testing.T) {
	onEachBackend(t, variants, func(t *testing.T, ctx context.Context, f *fixtureDB) {
		sessions := migratetest.Canonical()
		f.insert(t, sessions)
		want, _ := expectedRows(t, sessions)

		if _, err := f.openDriver(t); !errors.Is(err, db.ErrMigrationRequired) || !errors.Is(err, db.ErrSchemaMismatch) {
			t.Fatalf("opening a 2.x database = %v, want db.ErrMigrationRequired", err)
		}
		m := f.manager(t)
		if _, err := m.Up(ctx, ""); err != nil {
			t.Fatalf("Up: %v", err)
		}
		d, err := f.openDriver(t)
		if err != nil {
			t.Fatalf("opening the migrated database: %v", err)
		}
		got := map[string]runRow{}
		for _, s := range sessions {
			runs, _, err := d.GetRuns(ctx, db.RunFilter{SessionID: s.SessionID, Limit: 100, Page: 1})
			if err != nil {
				t.Fatalf("GetRuns(%s): %v", s.SessionID, err)
			}
			for i, r := range runs {
				if i > 0 && *runs[i-1].RunIndex >= *r.RunIndex {
					t.Errorf("session %s: runs not in run_index order", s.SessionID)
				}
				got[r.RunID] = fromDB(t, r)
			}
			// Until cleanup, merged reads return the same runs.
			merged, err := m.MergedSessionRuns(ctx, s.SessionID)
			var corrupt *db.CorruptRowError
			if err != nil && !errors.As(err, &corrupt) {
				t.Fatalf("MergedSessionRuns(%s): %v", s.SessionID, err)
			}
			if len(merged) != len(runs) {
				t.Errorf("session %s: merged reads return %d runs, the table %d", s.SessionID, len(merged), len(runs))
			}
		}
		compareRuns(t, got, want)
	})
}

func fromDB(t testing.TB, r db.Run) runRow {
	t.Helper()
	var data any
	if err := json.Unmarshal(r.RunData, &data); err != nil {
		t.Fatalf("run %s: run_data from the driver is not JSON: %v", r.RunID, err)
	}
	return runRow{RunID: r.RunID, SessionID: r.SessionID, RunType: string(r.RunType), AgentID: r.AgentID, TeamID: r.TeamID,
		WorkflowID: r.WorkflowID, UserID: r.UserID, ParentRunID: r.ParentRunID, Status: string(r.Status), RunIndex: *r.RunIndex,
		CreatedAt: r.CreatedAt, Data: data}
}

// TestDrivers_Pre230MemoriesRequireMigrationThenOpen: a memories table from
// before 2.3.0 (no created_at, feedback) next to 3.0 tables makes the driver
// ask for `agentry migrate up`; after Up it opens.
func TestDrivers_Pre230MemoriesRequireMigrationThenOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newDriverFixture(t, "sqlite",
		`DROP TABLE agno_memories`,
		`CREATE TABLE agno_memories (memory_id VARCHAR NOT NULL PRIMARY KEY, memory JSON NOT NULL, input TEXT, agent_id VARCHAR,
team_id VARCHAR, user_id VARCHAR, topics JSON, updated_at BIGINT)`,
		`INSERT INTO agno_memories (memory_id, memory, updated_at) VALUES ('m1', '"likes tea"', 1700000000)`,
		`DELETE FROM agno_schema_versions WHERE table_name = 'agno_memories'`)
	_, err := f.openDriver(t)
	if !errors.Is(err, db.ErrMigrationRequired) || !strings.Contains(err.Error(), "agentry migrate up") || !strings.Contains(err.Error(), "agno_memories") {
		t.Fatalf("opening with a pre-2.3.0 memories table = %v, want db.ErrMigrationRequired naming agno_memories", err)
	}
	if _, err := f.manager(t).Up(ctx, ""); err != nil {
		t.Fatalf("Up: %v", err)
	}
	if _, err := f.openDriver(t); err != nil {
		t.Fatalf("opening after Up: %v", err)
	}
	var created int64
	if err := f.db.QueryRow(`SELECT created_at FROM agno_memories WHERE memory_id = 'm1'`).Scan(&created); err != nil || created != 1700000000 {
		t.Errorf("created_at after Up = %d, %v; want it filled from updated_at", created, err)
	}
}
