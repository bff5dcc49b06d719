package agentos

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/jsontest"
	"github.com/agentryhq/agentry/migrate/migratetest"
	"github.com/agentryhq/agentry/run"
)

// TestMigratedAgnoRuns_ServedWithoutLoss: a 2.x SQLite database holding
// run_data as Agno writes it (agent, team and workflow runs; 2.0-era and 3.0
// shapes; a workflow run with a plain string input) is migrated through the
// server, and every run reads back through the runs routes with every
// stored member, plus the members AgentOS's run schemas add.
func TestMigratedAgnoRuns_ServedWithoutLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sessions, err := migratetest.FromRunFiles(filepath.Join("..", "run", "testdata", "agno"))
	if err != nil {
		t.Fatal(err)
	}
	raw, path := migratetest.SQLite(t)
	layout := migratetest.Layout{Dialect: "sqlite"}
	if err := migratetest.Create(ctx, raw, layout); err != nil {
		t.Fatal(err)
	}
	if err := migratetest.Insert(ctx, raw, layout, migratetest.All(sessions)); err != nil {
		t.Fatal(err)
	}
	// A deadline far above the default 5 s: the test is about what the
	// runs read back, and a loaded CI machine (-race, helpers) once took
	// longer than 5 s for one session's runs (503).
	legacy, err := sqlite.Open(ctx, sqlite.Config{Path: path, ID: "agno", SkipSchemaCheck: true, QueryTimeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { legacy.Close() })
	ts, _ := testServer(t, Config{DBs: []*db.DB{legacy}}, nil)
	if res := do(t, "POST", ts.URL+"/databases/agno/migrate", nil, nil); res.status != 200 {
		t.Fatalf("migrate = %d %s", res.status, res.body)
	}

	for _, s := range sessions {
		var stored []json.RawMessage
		if err := json.Unmarshal(s.Runs, &stored); err != nil {
			t.Fatal(err)
		}
		res := get(t, ts.URL+"/sessions/"+url.PathEscape(s.SessionID)+"/runs", nil)
		if res.status != 200 {
			t.Errorf("GET /sessions/%s/runs (%s) = %d %s", s.SessionID, s.SessionType, res.status, res.body)
			continue
		}
		views := decode[[]map[string]json.RawMessage](t, res)
		if len(views) != len(stored) {
			t.Errorf("session %s: %d runs, want %d", s.SessionID, len(views), len(stored))
			continue
		}
		for i, data := range stored {
			var ids struct {
				RunID string `json:"run_id"`
			}
			_ = json.Unmarshal(data, &ids)
			one := get(t, ts.URL+"/sessions/"+url.PathEscape(s.SessionID)+"/runs/"+url.PathEscape(ids.RunID), nil)
			if one.status != 200 {
				t.Errorf("GET run %s = %d %s", ids.RunID, one.status, one.body)
				continue
			}
			for route, view := range map[string][]byte{"list": mustMarshal(t, views[i]), "one": []byte(one.body)} {
				if d := jsontest.MissingFrom(withoutKeys(t, data, "created_at"), view); d != "" {
					t.Errorf("%s run %s (%s): the view lost stored data: %s", route, ids.RunID, route, d)
				}
				var v map[string]json.RawMessage
				_ = json.Unmarshal(view, &v)
				for _, k := range []string{"run_input", "run_response_format", "created_at", "input_media", "status"} {
					if len(v[k]) == 0 {
						t.Errorf("%s run %s: no %s", route, ids.RunID, k)
					}
				}
			}
		}
	}

	// What a client reads of the reported shapes.
	wf := decode[map[string]any](t, get(t, ts.URL+"/sessions/wf-session-11/runs/wf-run-3f2a", nil))
	if wf["run_input"] != "Research the latest on solid-state batteries and write a blog post" || wf["input"] != wf["run_input"] {
		t.Errorf("workflow run_input = %v, input = %v", wf["run_input"], wf["input"])
	}
	ag := decode[map[string]any](t, get(t, ts.URL+"/sessions/c0a8f7d2-5a1e-4b8b-8f57-3c1d9e0b7a21/runs/6f1c2a7e-1b8a-4f44-9d7e-0c3a4f2b9e11", nil))
	call := ag["messages"].([]any)[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	if fn, _ := call["function"].(map[string]any); fn["name"] != "get_weather" || fn["arguments"] != `{"city": "Paris"}` {
		t.Errorf("tool call = %v", call)
	}
}

func withoutKeys(t *testing.T, data []byte, keys ...string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		delete(m, k)
	}
	return mustMarshal(t, m)
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestListRuns_StatusFilterTakesEveryAgnoStatus: ?status= accepts every
// status Agno writes (REGENERATED included); anything else is 422 naming them.
func TestListRuns_StatusFilterTakesEveryAgnoStatus(t *testing.T) {
	t.Parallel()
	f := newRunsFixture(t, Config{})
	ctx := context.Background()
	if _, err := f.db.UpsertSession(ctx, &db.Session{SessionID: "s-re", SessionType: run.TypeAgent, AgentID: "echo"}); err != nil {
		t.Fatal(err)
	}
	row, err := db.RunFromOutput(&run.Output{RunID: "r-re", AgentID: "echo", SessionID: "s-re", Status: run.StatusRegenerated,
		Content: "old answer", CreatedAt: 1770000000})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.UpsertRun(ctx, row); err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{"REGENERATED", "regenerated"} {
		list := decode[[]map[string]any](t, get(t, f.url+"/agents/echo/runs?status="+st, nil))
		if len(list) != 1 || list[0]["run_id"] != "r-re" || list[0]["status"] != "REGENERATED" {
			t.Errorf("?status=%s = %v", st, list)
		}
	}
	if res := get(t, f.url+"/agents/echo/runs?status=done", nil); res.status != 422 || !strings.Contains(res.detail(t), "REGENERATED") {
		t.Errorf("?status=done = %d %s", res.status, res.body)
	}
	if res := do(t, "POST", f.url+"/agents/echo/runs/r-re/cancel", nil, nil); res.status != 409 {
		t.Errorf("cancel a REGENERATED run = %d %s, want 409", res.status, res.body)
	}
}
