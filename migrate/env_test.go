package migrate_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/agentryhq/agentry/db/mysql"
	"github.com/agentryhq/agentry/db/postgres"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// dialectName names a fixture's backend (the tests build its 2.x layout).
type dialectName string

const (
	sqliteName   dialectName = "sqlite"
	postgresName dialectName = "postgres"
	mysqlName    dialectName = "mysql"
)

// sqlDialect is the driver package's dialect for a fixture's backend.
func sqlDialect(name dialectName, schema string) *sqlstore.Dialect {
	switch name {
	case postgresName:
		return postgres.Dialect(schema)
	case mysqlName:
		return mysql.Dialect()
	}
	return sqlite.Dialect()
}

// fixtureDB is a 2.x database on one of the real backends.
type fixtureDB struct {
	db      *sql.DB
	dialect dialectName
	layout  migratetest.Layout
	path    string // SQLite file
	dsn     string
}

type variant struct {
	name     string
	dialect  string
	jsonType string
	stamp    string
}

var variants = []variant{
	{"sqlite/2.0.0", "sqlite", "", ""},
	{"sqlite/2.5.6", "sqlite", "", "2.5.6"},
	{"postgres/json/2.0.0", "postgres", "json", ""},
	{"postgres/jsonb/2.5.6", "postgres", "jsonb", "2.5.6"},
	{"mysql/2.0.0", "mysql", "", ""},
	{"mysql/2.5.6", "mysql", "", "2.5.6"},
}

// newFixture creates an empty 2.x database of the variant's layout.
func newFixture(t testing.TB, v variant) *fixtureDB {
	t.Helper()
	f := newEmptyFixture(t, v.dialect)
	f.layout.JSONType, f.layout.Stamp = v.jsonType, v.stamp
	if err := migratetest.Create(context.Background(), f.db, f.layout); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixtureDB) insert(t testing.TB, s []migratetest.Session) {
	t.Helper()
	if err := migratetest.Insert(context.Background(), f.db, f.layout, migratetest.All(s)); err != nil {
		t.Fatal(err)
	}
}

func (f *fixtureDB) manager(t testing.TB, mod ...func(*migrate.Config)) *migrate.Manager {
	t.Helper()
	cfg := migrate.Config{DB: f.db, Dialect: sqlDialect(f.dialect, f.layout.Schema), BatchSize: 3}
	for _, fn := range mod {
		fn(&cfg)
	}
	m, err := migrate.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (f *fixtureDB) table(name string) string {
	switch f.dialect {
	case postgresName:
		return `"` + f.layout.Schema + `"."` + name + `"`
	case mysqlName:
		return "`" + name + "`"
	}
	return `"` + name + `"`
}

// runRow is a runs-table row as the tests compare it.
type runRow struct {
	RunID, SessionID, RunType, AgentID, TeamID, WorkflowID, UserID, ParentRunID, Status string
	RunIndex, CreatedAt                                                                 int64
	Data                                                                                any
}

// readRuns reads the whole runs table (test fixtures are small).
func (f *fixtureDB) readRuns(t testing.TB) map[string]runRow {
	t.Helper()
	data := "run_data"
	if f.dialect == postgresName {
		data = "run_data::text"
	}
	rows, err := f.db.Query(fmt.Sprintf(`SELECT run_id, session_id, run_type, COALESCE(agent_id, ''), COALESCE(team_id, ''),
COALESCE(workflow_id, ''), COALESCE(user_id, ''), COALESCE(parent_run_id, ''), COALESCE(status, ''), run_index, created_at, %s FROM %s`,
		data, f.table("agno_runs")))
	if err != nil {
		t.Fatalf("read runs: %v", err)
	}
	defer rows.Close()
	out := map[string]runRow{}
	for rows.Next() {
		var r runRow
		var raw []byte
		if err := rows.Scan(&r.RunID, &r.SessionID, &r.RunType, &r.AgentID, &r.TeamID, &r.WorkflowID, &r.UserID,
			&r.ParentRunID, &r.Status, &r.RunIndex, &r.CreatedAt, &raw); err != nil {
			t.Fatal(err)
		}
		r.Data = decodeAny(t, raw)
		out[r.RunID] = r
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// decodeAny decodes JSON, removing up to two layers of string encoding.
func decodeAny(t testing.TB, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("run_data is not JSON: %v: %.200s", err, raw)
	}
	for range 2 {
		s, ok := v.(string)
		if !ok {
			break
		}
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatalf("string-encoded run_data is not JSON: %v", err)
		}
	}
	return v
}

// expectedRows turns fixture expectations into comparable rows.
func expectedRows(t testing.TB, sessions []migratetest.Session) (map[string]runRow, []migratetest.ExpectedBad) {
	t.Helper()
	return expectedRowsFor(t, migratetest.Layout{}, sessions)
}

// expectedRowsFor is expectedRows for a layout (see migratetest.ExpectedFor).
func expectedRowsFor(t testing.TB, l migratetest.Layout, sessions []migratetest.Session) (map[string]runRow, []migratetest.ExpectedBad) {
	t.Helper()
	exp, bad := migratetest.ExpectedFor(l, sessions)
	out := map[string]runRow{}
	for _, e := range exp {
		out[e.RunID] = runRow{RunID: e.RunID, SessionID: e.SessionID, RunType: e.RunType, AgentID: e.AgentID, TeamID: e.TeamID,
			WorkflowID: e.WorkflowID, UserID: e.UserID, ParentRunID: e.ParentRunID, Status: e.Status, RunIndex: e.RunIndex,
			CreatedAt: e.CreatedAt, Data: decodeAny(t, e.Data)}
	}
	return out, bad
}

func compareRuns(t testing.TB, got, want map[string]runRow) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("runs table has %d rows, want %d (got %v, want %v)", len(got), len(want), keys(got), keys(want))
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Errorf("run %s missing from runs table", id)
			continue
		}
		if !reflect.DeepEqual(g, w) {
			gd, wd := g, w
			gd.Data, wd.Data = nil, nil
			if !reflect.DeepEqual(gd, wd) {
				t.Errorf("run %s columns:\n got %+v\nwant %+v", id, gd, wd)
			} else {
				t.Errorf("run %s: run_data differs from the legacy element", id)
			}
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// onEachBackend runs body as a parallel subtest per variant, each on a new,
// empty 2.x database of its layout.
func onEachBackend(t *testing.T, vs []variant, body func(t *testing.T, ctx context.Context, f *fixtureDB)) {
	t.Helper()
	t.Parallel()
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			body(t, context.Background(), newFixture(t, v))
		})
	}
}
