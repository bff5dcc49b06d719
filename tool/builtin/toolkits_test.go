package builtin

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/migrate/migratetest"
	"github.com/agentryhq/agentry/tool/sqltools"
	_ "modernc.org/sqlite"
)

func names(t *testing.T, name string, opts map[string]any) []string {
	t.Helper()
	tools, err := New(name, opts)
	if err != nil {
		t.Fatalf("New(%s): %v", name, err)
	}
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Definition().Name)
	}
	return out
}

func sqliteFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)"); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNew_ToolkitsByNameWithOptions(t *testing.T) {
	t.Setenv("BRAVE_API_KEY", "k")
	dir := t.TempDir()
	tests := []struct {
		name string
		opts map[string]any
		want string
	}{
		{"web_search", nil, "web_search"},
		{"web_search", map[string]any{"backend": "brave", "timeout": 5, "allow_networks": []any{"10.0.0.0/8"}}, "web_search"},
		{"web_fetch", map[string]any{"respect_robots": true, "timeout": "10s", "max_bytes": 1000}, "web_fetch"},
		{"sql", map[string]any{"dsn": sqliteFile(t)}, "list_tables,describe_table,run_sql_query"},
		{"sql", map[string]any{"dsn": sqliteFile(t), "include_tools": []any{"run_sql_query"}}, "run_sql_query"},
		{"files", map[string]any{"base_dir": dir, "exclude_tools": []any{"save_file"}}, "read_file,read_file_chunk,list_files,search_files,search_content"},
		{"shell", map[string]any{"allowed_commands": []any{"ls", "cat"}, "timeout": "5s"}, "run_shell_command"},
		{"http_request", map[string]any{"allowed_hosts": []any{"api.example.com"}, "methods": []any{"GET"}}, "http_request"},
		{"http_request", map[string]any{"allowed_hosts": []any{"10.0.0.5"}, "headers": map[string]any{"X-Key": "k"}, "headers_over_http": true}, "http_request"},
	}
	for _, tc := range tests {
		if got := strings.Join(names(t, tc.name, tc.opts), ","); got != tc.want {
			t.Errorf("%s %v: tools %s, want %s", tc.name, tc.opts, got, tc.want)
		}
	}
}

// Options are applied: a setting the toolkit understands changes what it does.
func TestNew_OptionsAreApplied(t *testing.T) {
	t.Parallel()
	if _, err := New("files", map[string]any{"base_dir": filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("files built on a missing base_dir")
	}
	if _, err := New("shell", map[string]any{"allowed_commands": []any{"bash"}}); err == nil {
		t.Error("shell allowed bash")
	}
	if _, err := New("files", map[string]any{"base_dir": t.TempDir(), "exclude_patterns": []any{"src/vendor"}}); err == nil || !strings.Contains(err.Error(), "exclude_patterns") {
		t.Errorf("files took an exclude pattern with a /: %v", err)
	}
	if _, err := New("files", map[string]any{"base_dir": t.TempDir(), "exclude_patterns": []any{}}); err != nil {
		t.Errorf("files refused exclude_patterns []: %v", err)
	}
	if _, err := New("sql", map[string]any{"dsn": filepath.Join(t.TempDir(), "none.db")}); err == nil {
		t.Error("sql opened a missing SQLite file")
	}
}

func TestCheck_RefusesBadOptionsAtStart(t *testing.T) {
	t.Setenv("TAVILY_API_KEY", "")
	tests := []struct {
		name string
		opts map[string]any
		want string
	}{
		{"sql", map[string]any{"dsn": "x.db", "enable_list_tables": true}, `"enable_list_tables" was removed in Agno 3.0: use include_tools / exclude_tools`},
		{"sql", map[string]any{"db_url": "postgres://x"}, `use dsn`},
		{"sql", map[string]any{}, "dsn is required"},
		{"sql", map[string]any{"dsn": "x.db", "max_rows": "many"}, "option max_rows: got string, want a whole number"},
		{"sql", map[string]any{"dsn": "x.db", "bogus": 1}, "unknown option bogus (valid options: allow_write, dsn, exclude_tools, include_tools, max_output, max_rows, refuse_privileged, schema, timeout)"},
		{"sql", map[string]any{"dsn": "${AGENTRY_NO_SUCH_VAR}"}, "unset environment variable AGENTRY_NO_SUCH_VAR"},
		{"web_search", map[string]any{"enable_news": false}, "removed in Agno 3.0"},
		{"web_search", map[string]any{"backend": "bing"}, "use duckduckgo, searxng, brave or tavily"},
		{"web_search", map[string]any{"backend": "tavily"}, "set TAVILY_API_KEY"},
		{"web_search", map[string]any{"backend": "searxng"}, "needs base_url"},
		{"web_search", map[string]any{"timeout": "soon"}, "not a duration"},
		{"web_fetch", map[string]any{"timeout": 1e300}, "not a duration"}, // overflowed to "unset"
		{"web_fetch", map[string]any{"max_output": -1}, "option max_output: -1 is negative"},
		{"files", map[string]any{"base_dir": ".", "max_read_bytes": -5}, "option max_read_bytes: -5 is negative"},
		{"http_request", map[string]any{"allowed_hosts": []any{"x.com"}, "max_response_bytes": -1}, "is negative"},
		// Settings every call would fail on are refused at start.
		{"web_fetch", map[string]any{"user_agent": "bot\r\nX-Evil: 1"}, "user_agent"},
		{"web_search", map[string]any{"backend": "searxng", "base_url": "searx.internal:8080"}, "base_url"},
		{"web_search", map[string]any{"base_url": "ftp://mirror.example"}, "base_url"},
		{"web_search", map[string]any{"backend": "searxng", "base_url": "http://127.0.0.1:8080"}, "allow_networks"},
		// Settings the chosen backend has no use for are refused, not ignored.
		{"web_search", map[string]any{"api_key": "k"}, "duckduckgo takes no api_key"},
		{"web_search", map[string]any{"backend": "searxng", "base_url": "http://searx.example", "api_key": "k"}, "searxng takes no api_key"},
		{"web_search", map[string]any{"backend": "tavily", "api_key": "k", "region": "us-en"}, "tavily takes no region"},
		{"shell", map[string]any{"allowed_commands": []any{"ls"}, "env": []any{"PATH"}}, "KEY=value"},
		{"shell", map[string]any{"allowed_commands": []any{"ls"}, "env": []any{"=x"}}, "KEY=value"},
		{"web_search", map[string]any{"allow_networks": []any{"lan"}}, "allow_networks"},
		{"web_fetch", map[string]any{"robots": true}, "unknown option robots"},
		{"files", map[string]any{"root": "."}, "unknown option root (valid options: base_dir"},
		{"files", map[string]any{}, "base_dir is required"},
		{"shell", map[string]any{}, "off unless allowed_commands"},
		{"shell", map[string]any{"enable_run_shell_command": true}, "removed in Agno 3.0"},
		{"http_request", map[string]any{}, "allowed_hosts is required"},
		{"http_request", map[string]any{"allowed_hosts": []any{"x.com"}, "headers": map[string]any{"Authorization": "Bearer ${AGENTRY_NO_SUCH_TOKEN}"}}, "AGENTRY_NO_SUCH_TOKEN"},
		{"calculator", map[string]any{"precision": 2}, "takes no options"},
		{"sql", map[string]any{"dsn": sqliteFile(t), "include_tools": []any{"drop_table"}}, "has no tool"},
	}
	for _, tc := range tests {
		err := Check(tc.name, tc.opts)
		if tc.name == "sql" && strings.HasSuffix(tc.want, "has no tool") {
			_, err = New(tc.name, tc.opts)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %v: err = %v, want it to contain %q", tc.name, tc.opts, err, tc.want)
		}
	}
	// Check opens nothing: a SQLite file that does not exist yet passes.
	if err := Check("sql", map[string]any{"dsn": "./created-later.db"}); err != nil {
		t.Errorf("Check touched the database: %v", err)
	}
	if err := Check("no_such_tool", nil); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown name: %v", err)
	}
}

func TestNew_AgnoNamesPointToAgentrys(t *testing.T) {
	t.Parallel()
	for old, want := range map[string]string{"duckduckgo_search": "web_search", "sql_tools": "sql", "file_tools": "files", "shell_tools": "shell"} {
		_, err := New(old, nil)
		if !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), `"`+want+`"`) {
			t.Errorf("%s: err = %v, want one naming %q", old, err, want)
		}
	}
}

// refuse_privileged reaches the toolkit: on the test Postgres, whose user
// is a superuser, a call fails with sqltools.ErrPrivileged; without the
// option it runs (the toolkit only warns).
func TestNew_SQLRefusePrivileged(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("AGENTRY_TEST_POSTGRES_DSN")
	if dsn == "" {
		dsn = migratetest.DefaultPostgresDSN
	}
	for _, refuse := range []bool{false, true} {
		tools, err := New("sql", map[string]any{"dsn": dsn, "refuse_privileged": refuse, "include_tools": []any{"list_tables"}})
		if err != nil {
			t.Fatalf("New(sql, refuse_privileged %v): %v", refuse, err)
		}
		_, err = tools[0].Call(context.Background(), json.RawMessage(`{}`))
		if refuse != errors.Is(err, sqltools.ErrPrivileged) || (!refuse && err != nil) {
			t.Errorf("refuse_privileged %v: list_tables as a superuser = %v", refuse, err)
		}
	}
}
