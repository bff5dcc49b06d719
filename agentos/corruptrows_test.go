package agentos

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/sqlstore"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// A row another writer left undecodable (a REAL timestamp, text that is not
// JSON: SQLite stores them) is left out of the list endpoints, which serve
// the other rows and log it, instead of failing every listing with a 500.
func TestLists_UndecodableRowIsLeftOutNotA500(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: scripted.Reply("hi"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	var runIDs []string
	for _, sid := range []string{"s1", "s2", "s2", "s2", "s3"} {
		out, err := a.Run(ctx, run.TextInput("hello"), agent.WithSessionID(sid))
		if err != nil {
			t.Fatal(err)
		}
		if sid == "s2" {
			runIDs = append(runIDs, out.RunID)
		}
	}
	for _, id := range []string{"m1", "m2", "m3"} {
		if _, err := d.UpsertMemory(ctx, &db.Memory{MemoryID: id, Memory: "fact " + id, UserID: "u"}); err != nil {
			t.Fatal(err)
		}
	}
	st, _ := sqlstore.FromDB(d)
	for _, q := range []string{
		`UPDATE agno_sessions SET session_data = '{"session_name": "half' WHERE session_id = 's1'`,
		`UPDATE agno_sessions SET created_at = 1712345678.5 WHERE session_id = 's3'`,
		`UPDATE agno_runs SET updated_at = 1712345678.5 WHERE run_id = '` + runIDs[1] + `'`,
		`UPDATE agno_memories SET created_at = 1712345678.5 WHERE memory_id = 'm2'`,
	} {
		if _, err := st.SQL().ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	ts, logs := testServer(t, Config{Agents: []*agent.Agent{a}}, nil)

	ids := func(path, key string) []string {
		t.Helper()
		res := get(t, ts.URL+path, nil)
		if res.status != 200 {
			t.Fatalf("GET %s = %d %s", path, res.status, res.body)
		}
		var out []string
		if strings.Contains(path, "/runs") {
			for _, v := range decode[[]map[string]any](t, res) {
				out = append(out, v[key].(string))
			}
			return out
		}
		for _, v := range decode[paginated[map[string]any]](t, res).Data {
			out = append(out, v[key].(string))
		}
		return out
	}
	if got := ids("/sessions", "session_id"); !slices.Equal(got, []string{"s2"}) {
		t.Errorf("GET /sessions lists %v, want s2 (s1 and s3 do not decode)", got)
	}
	if got := ids("/memories?user_id=u", "memory_id"); len(got) != 2 || slices.Contains(got, "m2") {
		t.Errorf("GET /memories lists %v, want m1 and m3", got)
	}
	if got := ids("/sessions/s2/runs", "run_id"); !slices.Equal(got, []string{runIDs[0], runIDs[2]}) {
		t.Errorf("GET /sessions/s2/runs lists %v, want %v", got, []string{runIDs[0], runIDs[2]})
	}
	if !strings.Contains(logs.String(), "unreadable rows left out") {
		t.Errorf("the left-out rows were not logged:\n%s", logs.String())
	}
}
