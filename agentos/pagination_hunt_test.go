package agentos

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// pagedServer serves agent "echo" on d, with one run of alice's in session
// s1 so every listing has a first page to leak.
func pagedServer(t *testing.T, d *db.DB) string {
	t.Helper()
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: scripted.Reply("hi there"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Run(context.Background(), run.TextInput("hello"), agent.WithSessionID("s1"), agent.WithUserID("alice")); err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}, DBs: []*db.DB{d}}, nil)
	return ts.URL
}

// TestListRoutes_PageWhoseOffsetOverflowsIs422: ?page=9223372036854775807
// made (page-1)*limit wrap to a negative offset: Postgres and MySQL refused
// it (500), the in-memory store panicked slicing with it (500) and SQLite
// read it as 0, answering page 1's rows as that page. It is now a 422
// naming page, on every paginated route and both search bodies; the largest
// page whose offset fits is still an empty 200 page.
func TestListRoutes_PageWhoseOffsetOverflowsIs422(t *testing.T) {
	t.Parallel()
	paths := []string{"/sessions", "/memories", "/user_memory_stats", "/approvals", "/learnings", "/learnings/users",
		"/eval-runs", "/schedules", "/components", "/traces", "/trace_session_stats"}
	huge := fmt.Sprint(int64(math.MaxInt64))
	lastFit := fmt.Sprint(int64(math.MaxInt64)/2 + 1) // (page-1)*2 == MaxInt64-1
	check := func(t *testing.T, u string, paths []string) {
		for _, p := range paths {
			for _, q := range []string{"page=" + huge, "page=" + huge + "&limit=100", "page=" + fmt.Sprint(int64(math.MaxInt64)/2+2) + "&limit=2"} {
				if res := get(t, u+p+"?"+q, nil); res.status != 422 || !strings.Contains(res.detail(t), "page is too large") {
					t.Errorf("GET %s?%s = %d %s, want 422 naming page", p, q, res.status, res.body)
				}
			}
			res := get(t, u+p+"?limit=2&page="+lastFit, nil)
			if res.status != 200 {
				t.Errorf("GET %s at the last page that fits = %d %s", p, res.status, res.body)
				continue
			}
			if page := decode[paginated[map[string]any]](t, res); len(page.Data) != 0 || fmt.Sprint(page.Meta.Page) != lastFit {
				t.Errorf("GET %s at the last page that fits = %s, want no rows", p, res.body)
			}
		}
		for _, body := range []string{`{"page":` + huge + `}`, `{"page":` + huge + `,"limit":100,"group_by":"session"}`} {
			if res := do(t, "POST", u+"/traces/search", strings.NewReader(body), jsonHeader); res.status != 422 || !strings.Contains(res.detail(t), "page is too large") {
				t.Errorf("POST /traces/search %s = %d %s, want 422", body, res.status, res.body)
			}
		}
	}
	for name, open := range map[string]func(testing.TB) *db.DB{
		"postgres": testdbs.Postgres, "mysql": testdbs.MySQL,
		"memory": func(testing.TB) *db.DB { return db.New("mem", memory.New()) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			check(t, pagedServer(t, open(t)), paths)
		})
	}
	t.Run("sqlite with the durable queue", func(t *testing.T) {
		t.Parallel()
		u, _, _ := durableServer(t, scripted.Reply("done"), queue.Config{}, Config{})
		if res := postForm(t, u+"/agents/echo/runs", map[string]string{"message": "hi", "stream": "false", "session_id": "s1", "user_id": "alice"}, nil); res.status != 200 {
			t.Fatalf("run = %d %s", res.status, res.body)
		}
		check(t, u, append(paths, "/queue/jobs"))
	})
	t.Run("knowledge", func(t *testing.T) {
		t.Parallel()
		f := newKnowledgeFixture(t, 0)
		for _, p := range []string{"/knowledge/content?page=" + huge, "/knowledge/content?limit=2&page=" + fmt.Sprint(int64(math.MaxInt64)/2+2)} {
			if res := get(t, f.url+p, f.adminH); res.status != 422 || !strings.Contains(res.detail(t), "page is too large") {
				t.Errorf("GET %s = %d %s, want 422", p, res.status, res.body)
			}
		}
		for _, body := range []string{
			`{"query":"tea","meta":{"page":` + huge + `}}`,
			`{"query":"tea","meta":{"page":3,"limit":` + fmt.Sprint(int64(math.MaxInt64)/2+1) + `}}`,
		} {
			if res := do(t, "POST", f.url+"/knowledge/search", strings.NewReader(body), withCT(f.adminH, "application/json")); res.status != 422 || !strings.Contains(res.detail(t), "page is too large") {
				t.Errorf("POST /knowledge/search %s = %d %s, want 422", body, res.status, res.body)
			}
		}
		// A limit past every result on page 2 is an empty page, not a panic.
		body := `{"query":"tea","meta":{"page":2,"limit":` + huge + `}}`
		res := do(t, "POST", f.url+"/knowledge/search", strings.NewReader(body), withCT(f.adminH, "application/json"))
		if res.status != 200 || !strings.Contains(res.body, `"data":[]`) {
			t.Errorf("POST /knowledge/search %s = %d %s, want an empty page", body, res.status, res.body)
		}
	})
}
