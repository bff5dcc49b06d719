package migrate_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

func TestStatus_UnknownLayoutIsSchemaMismatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		ddl    []string
		table  string
		detail string
	}{
		{"sessions table without session_type", []string{`CREATE TABLE agno_sessions (session_id TEXT PRIMARY KEY, created_at INTEGER, runs TEXT)`},
			"agno_sessions", "session_type"},
		{"sessions table with neither runs column nor runs table", []string{`CREATE TABLE agno_sessions (session_id TEXT PRIMARY KEY, session_type TEXT, created_at INTEGER)`},
			"agno_sessions", "neither 2.x nor 3.0"},
		{"unknown version stamp", []string{
			`CREATE TABLE agno_sessions (session_id TEXT PRIMARY KEY, session_type TEXT, created_at INTEGER, runs TEXT)`,
			`CREATE TABLE agno_schema_versions (table_name TEXT PRIMARY KEY, version TEXT, created_at TEXT, updated_at TEXT)`,
			`INSERT INTO agno_schema_versions VALUES ('agno_sessions', '9.9.9', '', '')`},
			"agno_sessions", "9.9.9"},
		{"memories table of another program", []string{`CREATE TABLE agno_memories (id INTEGER PRIMARY KEY, text TEXT)`},
			"agno_memories", "memory_id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sqlDB, _ := migratetest.SQLite(t)
			for _, s := range tc.ddl {
				if _, err := sqlDB.Exec(s); err != nil {
					t.Fatal(err)
				}
			}
			m, err := migrate.New(migrate.Config{DB: sqlDB, Dialect: sqlite.Dialect()})
			if err != nil {
				t.Fatal(err)
			}
			for name, call := range map[string]func() error{
				"Status": func() error { _, err := m.Status(context.Background()); return err },
				"Up":     func() error { _, err := m.Up(context.Background(), ""); return err },
			} {
				err := call()
				var mis *migrate.SchemaMismatchError
				if !errors.Is(err, db.ErrSchemaMismatch) || !errors.As(err, &mis) || mis.Table != tc.table || !strings.Contains(err.Error(), tc.detail) {
					t.Errorf("%s = %v, want a schema mismatch on %s mentioning %q", name, err, tc.table, tc.detail)
				}
			}
		})
	}
}

func TestUp_DryRunReportsWithoutWriting(t *testing.T) {
	t.Parallel()
	f := newFixture(t, variants[0])
	sessions := migratetest.Canonical()
	f.insert(t, sessions)
	want, wantBad := expectedRows(t, sessions)
	dry := f.manager(t, func(c *migrate.Config) { c.DryRun = true })
	before, err := dry.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sum, err := dry.Up(context.Background(), "")
	if err != nil {
		t.Fatalf("dry Up: %v", err)
	}
	if !sum.DryRun || sum.RunsCopied != int64(len(want)) || sum.BadRowCount != int64(len(wantBad)) || len(sum.Steps) == 0 {
		t.Errorf("dry-run summary = %+v, want %d runs and %d bad rows planned", sum, len(want), len(wantBad))
	}
	after, err := dry.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.EqualFunc(before, after, func(a, b migrate.TableStatus) bool {
		return a.Current == b.Current && a.Exists == b.Exists && slices.Equal(a.Pending, b.Pending)
	}) {
		t.Errorf("dry run changed the status:\nbefore %+v\nafter  %+v", before, after)
	}
	var n int
	if err := f.db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name IN ('agno_runs', 'agno_schema_versions', 'agno_migration_errors')`).Scan(&n); err != nil || n != 0 {
		t.Errorf("dry run created %d tables (%v)", n, err)
	}
	res, err := dry.CleanupLegacyRunsColumn(context.Background(), migrate.CleanupOptions{Force: true})
	if !errors.Is(err, migrate.ErrNotMigrated) {
		t.Errorf("cleanup before Up = %+v, %v; want ErrNotMigrated", res, err)
	}
}

func TestUp_ReportsProgressPerBatch(t *testing.T) {
	t.Parallel()
	f := newFixture(t, variants[0])
	sessions := migratetest.Canonical()
	f.insert(t, sessions)
	want, _ := expectedRows(t, sessions)
	var seen []migrate.Progress
	m := f.manager(t, func(c *migrate.Config) { c.Progress = func(p migrate.Progress) { seen = append(seen, p) } })
	if _, err := m.Up(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	if len(seen) < 3 {
		t.Fatalf("got %d progress reports, want one per batch of 3", len(seen))
	}
	for i := 1; i < len(seen); i++ {
		if seen[i].SessionsDone <= seen[i-1].SessionsDone || seen[i].RunsCopied < seen[i-1].RunsCopied {
			t.Errorf("progress went backwards: %+v then %+v", seen[i-1], seen[i])
		}
	}
	last := seen[len(seen)-1]
	if last.SessionsDone != last.SessionsTotal || last.RunsCopied != int64(len(want)) || last.Table != "agno_sessions" {
		t.Errorf("last progress = %+v, want all %d sessions and %d runs", last, last.SessionsTotal, len(want))
	}
}

func TestMergeRuns_TableWinsAndTableOnlyRunsFollow(t *testing.T) {
	t.Parallel()
	idx := func(i int64) *int64 { return &i }
	row := func(id string, i int64, content string) db.Run {
		return db.Run{RunID: id, SessionID: "s", RunType: "agent", RunIndex: idx(i), RunData: json.RawMessage(`{"run_id":"` + id + `","content":"` + content + `"}`)}
	}
	legacy := `[{"run_id":"a","agent_id":"x","content":"old a"},{"content":"no id"},{"run_id":"b","team_id":"t","content":"old b"}]`
	tests := []struct {
		name    string
		legacy  []byte
		table   []db.Run
		want    []string // run_id:content
		corrupt bool
	}{
		{"table row replaces the legacy element", []byte(legacy), []db.Run{row("b", 2, "new b")}, []string{"a:old a", "b:new b"}, false},
		{"table-only runs are appended in table order", []byte(legacy), []db.Run{row("c", 3, "c"), row("d", 4, "d")}, []string{"a:old a", "b:old b", "c:c", "d:d"}, false},
		{"double-encoded legacy column", []byte(mustQuote(mustQuote(legacy))), nil, []string{"a:old a", "b:old b"}, false},
		{"no legacy column value", nil, []db.Run{row("a", 0, "a")}, []string{"a:a"}, false},
		{"JSON null legacy", []byte("null"), nil, nil, false},
		{"corrupt legacy yields the table and an error", []byte(`[{"run_id":`), []db.Run{row("a", 0, "a")}, []string{"a:a"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := migrate.MergeRuns(&db.Session{SessionID: "s", UserID: "u"}, tc.legacy, tc.table)
			if tc.corrupt != errors.Is(err, db.ErrCorruptRow) {
				t.Fatalf("err = %v, want corrupt=%v", err, tc.corrupt)
			}
			var ids []string
			for _, r := range got {
				var v struct{ Content string }
				_ = json.Unmarshal(r.RunData, &v)
				ids = append(ids, r.RunID+":"+v.Content)
				if r.SessionID != "s" {
					t.Errorf("run %s has session %q", r.RunID, r.SessionID)
				}
			}
			if !slices.Equal(ids, tc.want) {
				t.Errorf("merged = %v, want %v", ids, tc.want)
			}
		})
	}
	// Legacy-only runs carry the session's user and their array position.
	got, _ := migrate.MergeRuns(&db.Session{SessionID: "s", UserID: "u"}, []byte(legacy), nil)
	if got[1].RunID != "b" || *got[1].RunIndex != 2 || got[1].UserID != "u" || got[1].RunType != "team" {
		t.Errorf("legacy-only run = %+v, want b at index 2 of user u, type team", got[1])
	}
}

func mustQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestUp_StepsOnlyToTheTarget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		target, want string
		err          error
	}{
		{"2.3.0", "2.3.0", nil},
		{"2.5.6", "2.5.6", nil},
		{"", migrate.Latest, nil},
		{"4.0.0", "2.0.0", migrate.ErrUnknownVersion},
	}
	for _, tc := range tests {
		t.Run("target="+tc.target, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, variants[0])
			f.insert(t, migratetest.Canonical()[:3])
			m := f.manager(t)
			sum, err := m.Up(context.Background(), tc.target)
			if !errors.Is(err, tc.err) {
				t.Fatalf("Up(%q) = %v, want %v", tc.target, err, tc.err)
			}
			st := statusOf(t, m, migrate.KindSessions)
			if st.Current != tc.want {
				t.Errorf("sessions at %s, want %s", st.Current, tc.want)
			}
			if tc.err == nil && tc.want != migrate.Latest {
				if sum.RunsCopied != 0 || statusOf(t, m, migrate.KindToolResults).Exists {
					t.Errorf("Up to %s copied runs or created 3.0 tables: %+v", tc.target, sum)
				}
			}
		})
	}
}

func TestUp_CreatesEveryTableOfAnEmptyDatabase(t *testing.T) {
	t.Parallel()
	sqlDB, path := migratetest.SQLite(t)
	m, err := migrate.New(migrate.Config{DB: sqlDB, Dialect: sqlite.Dialect()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(context.Background(), ""); err != nil {
		t.Fatalf("Up on an empty database: %v", err)
	}
	sts, err := m.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if !s.Exists || s.Current != migrate.Latest || s.LegacyRunsColumn {
			t.Errorf("after Up: %+v", s)
		}
	}
	f := &fixtureDB{dialect: sqliteName, path: path}
	if _, err := f.openDriver(t); err != nil {
		t.Fatalf("the driver refuses the database Up created: %v", err)
	}
}
