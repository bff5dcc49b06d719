package agentos

import (
	"context"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/agentos/auth"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/migrate"
	"github.com/agentryhq/agentry/migrate/migratetest"
)

// openSQLite opens a fresh 3.0 SQLite database under the test's temp dir.
func openSQLite(t *testing.T, id string) *db.DB {
	t.Helper()
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), id+".db"), ID: id})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// legacySQLite builds an Agno 2.x SQLite database holding the canonical
// fixture's sessions and opens it without the schema check.
func legacySQLite(t *testing.T, id string) (*db.DB, []migratetest.Session) {
	t.Helper()
	ctx := context.Background()
	raw, path := migratetest.SQLite(t)
	layout := migratetest.Layout{Dialect: "sqlite"}
	// The canonical fixture minus its 1 MiB run, which only slows this test.
	sessions := slices.DeleteFunc(migratetest.Canonical(), func(s migratetest.Session) bool { return s.SessionID == "s-big" })
	if err := migratetest.Create(ctx, raw, layout); err != nil {
		t.Fatal(err)
	}
	if err := migratetest.Insert(ctx, raw, layout, migratetest.All(sessions)); err != nil {
		t.Fatal(err)
	}
	d, err := sqlite.Open(ctx, sqlite.Config{Path: path, ID: id, SkipSchemaCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, sessions
}

// sessionsVersion reads the sessions table's stamped version.
func sessionsVersion(t *testing.T, d *db.DB) string {
	t.Helper()
	m, release, err := migrate.ForDB(d, migrate.Config{})
	if err != nil {
		t.Fatalf("%s: %v", d.ID, err)
	}
	defer release()
	sts, err := m.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sts {
		if s.Kind == migrate.KindSessions {
			return s.Current
		}
	}
	t.Fatal("no sessions table in status")
	return ""
}

func TestMigrate_LegacyDatabaseIsMigratedAndReadable(t *testing.T) {
	t.Parallel()
	legacy, sessions := legacySQLite(t, "legacy")
	ts, _ := testServer(t, Config{DBs: []*db.DB{legacy}}, nil)
	res := do(t, "POST", ts.URL+"/databases/legacy/migrate", nil, nil)
	if res.status != 200 || res.body != `{"message":"Database migrated successfully to latest version"}`+"\n" {
		t.Fatalf("POST /databases/legacy/migrate = %d %s", res.status, res.body)
	}
	if v := sessionsVersion(t, legacy); v != migrate.Latest {
		t.Errorf("sessions version = %s, want %s", v, migrate.Latest)
	}
	want, _ := migratetest.Expected(sessions)
	perSession := map[string]int{}
	for _, r := range want {
		perSession[r.SessionID]++
	}
	for sid, n := range perSession {
		runs, _, err := legacy.GetRuns(context.Background(), db.RunFilter{SessionID: sid, Limit: 100, Page: 1})
		if err != nil || len(runs) != n {
			t.Errorf("session %s: %d runs (%v), want %d", sid, len(runs), err, n)
		}
	}
	// Running it again is a no-op that still succeeds.
	if res := do(t, "POST", ts.URL+"/databases/legacy/migrate", nil, nil); res.status != 200 {
		t.Errorf("second migrate = %d %s", res.status, res.body)
	}
}

func TestMigrate_TargetVersionMovesUpDownAndUp(t *testing.T) {
	t.Parallel()
	d, _ := legacySQLite(t, "main")
	ts, _ := testServer(t, Config{DBs: []*db.DB{d}}, nil)
	steps := []struct {
		query, body, want string
	}{
		{"?target_version=3.0.0", "", "3.0.0"},
		{"?target_version=2.5.6", "", "2.5.6"},
		{"", `{"target_version":"v3.0.0"}`, "3.0.0"},
	}
	for _, st := range steps {
		res := do(t, "POST", ts.URL+"/databases/main/migrate"+st.query, strings.NewReader(st.body), jsonHeader)
		if res.status != 200 || !strings.Contains(res.body, "version "+st.want) {
			t.Fatalf("migrate %s%s = %d %s", st.query, st.body, res.status, res.body)
		}
		if v := sessionsVersion(t, d); v != st.want {
			t.Fatalf("after migrate %s%s: sessions at %s", st.query, st.body, v)
		}
	}
	runs, _, err := d.GetRuns(context.Background(), db.RunFilter{SessionID: "s-agent", Limit: 10, Page: 1})
	if err != nil || len(runs) != 3 {
		t.Errorf("s-agent after up, down, up: %d runs, %v", len(runs), err)
	}
}

func TestMigrateAll_ReportsFailuresWith207(t *testing.T) {
	t.Parallel()
	good, broken := openSQLite(t, "good"), openSQLite(t, "broken")
	mem := db.New("mem", memory.New())
	ts, _ := testServer(t, Config{DBs: []*db.DB{good, broken, mem}}, nil)

	res := do(t, "POST", ts.URL+"/databases/all/migrate", nil, nil)
	if res.status != 200 || !contains(res.body, `"message":"All databases migrated successfully to latest version"`, `"skipped":["mem"]`) {
		t.Fatalf("all healthy = %d %s", res.status, res.body)
	}

	// Break one database: its sessions table claims a version no release has.
	st, _ := broken.Driver().(db.SQLBacked).SQLTarget()
	defer st.Release()
	if _, err := st.DB.Exec(`UPDATE agno_schema_versions SET version = '9.9.9' WHERE table_name = 'agno_sessions'`); err != nil {
		t.Fatal(err)
	}
	res = do(t, "POST", ts.URL+"/databases/all/migrate?target_version=3.0.0", nil, nil)
	if res.status != 207 {
		t.Fatalf("one broken = %d %s, want 207", res.status, res.body)
	}
	body := decode[struct {
		Message string            `json:"message"`
		Failed  map[string]string `json:"failed"`
		Skipped []string          `json:"skipped"`
	}](t, res)
	if body.Message != "Migrated 1/2 databases to version 3.0.0" || len(body.Failed) != 1 || body.Failed["broken"] == "" ||
		len(body.Skipped) != 1 || body.Skipped[0] != "mem" {
		t.Errorf("207 body = %+v", body)
	}
	if res := do(t, "POST", ts.URL+"/databases/broken/migrate", nil, nil); res.status != 500 || !strings.HasPrefix(res.detail(t), "Failed to migrate database: ") {
		t.Errorf("broken single = %d %s", res.status, res.body)
	}
	if res := do(t, "POST", ts.URL+"/databases/mem/migrate", nil, nil); res.status != 200 || !strings.Contains(res.body, `"skipped":["mem"]`) {
		t.Errorf("memory db = %d %s", res.status, res.body)
	}
}

func TestMigrate_BadRequests(t *testing.T) {
	t.Parallel()
	d := openSQLite(t, "main")
	ts, _ := testServer(t, Config{DBs: []*db.DB{d}}, nil)
	tests := []struct {
		name, path, body string
		want             int
	}{
		{"unknown db", "/databases/nope/migrate", "", 404},
		{"unknown version in query", "/databases/main/migrate?target_version=9.9.9", "", 422},
		{"unknown version in body", "/databases/all/migrate", `{"target_version":"2.4.0"}`, 422},
		{"injection in version", "/databases/all/migrate?target_version=" + url.QueryEscape("3.0.0';--") + "", "", 422},
		{"query and body disagree", "/databases/main/migrate?target_version=3.0.0", `{"target_version":"2.5.6"}`, 422},
		{"body not JSON", "/databases/main/migrate", `target_version=3.0.0`, 422},
		{"down to a version it cannot restore", "/databases/main/migrate?target_version=2.3.0", "", 422},
		{"unknown body field", "/databases/all/migrate", `{"version":"3.0.0"}`, 422},
		{"oversized body", "/databases/all/migrate", `{"target_version":"` + strings.Repeat("3", 2<<20) + `"}`, 413},
		{"GET is not allowed", "", "", 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var res response
			if tt.path == "" {
				res = get(t, ts.URL+"/databases/main/migrate", nil)
			} else {
				res = do(t, "POST", ts.URL+tt.path, strings.NewReader(tt.body), jsonHeader)
			}
			if res.status != tt.want || res.detail(t) == "" {
				t.Errorf("= %d %s, want %d with a detail", res.status, res.body, tt.want)
			}
		})
	}
	if res := do(t, "POST", ts.URL+"/databases/nope/migrate", nil, nil); res.detail(t) != "Database not found" {
		t.Errorf("unknown db detail = %q", res.detail(t))
	}
}

// TestMigrate_AdminOnly: with authentication on, only admins (a token with
// agent_os:admin, or the security key) may migrate, even when scope
// authorization is off or the token holds every other scope.
func TestMigrate_AdminOnly(t *testing.T) {
	t.Parallel()
	for _, authorization := range []bool{false, true} {
		d := openSQLite(t, "main")
		ts, _ := testServer(t, Config{DBs: []*db.DB{d}, UserIsolation: true,
			Auth: Auth{Authenticator: jwtAuthenticator(t, "the-os-key-0123456789"), Authorization: authorization}}, nil)
		callers := []struct {
			name   string
			header map[string]string
			want   int
		}{
			{"no token", nil, 401},
			{"user", bearer(hsToken(t, jwt.MapClaims{"sub": "alice"})), 403},
			{"user with every resource scope", bearer(hsToken(t, jwt.MapClaims{"sub": "alice", "scopes": []string{"*:*", "databases:migrate"}})), 403},
			{"admin token", bearer(hsToken(t, jwt.MapClaims{"sub": "root", "scopes": []string{auth.AdminScope}})), 200},
			{"security key", bearer("the-os-key-0123456789"), 200},
		}
		for _, c := range callers {
			for _, path := range []string{"/databases/all/migrate", "/databases/main/migrate"} {
				res := do(t, "POST", ts.URL+path, nil, c.header)
				if res.status != c.want {
					t.Errorf("authorization=%v %s POST %s = %d %s, want %d", authorization, c.name, path, res.status, res.body, c.want)
				}
			}
		}
	}
}
