package agentos

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/golang-jwt/jwt/v5"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
)

// seedMemories stores alice's m-alice (older) and bob's m-bob (newer) and
// returns a function counting the memories in the database.
func seedMemories(t *testing.T, d *db.DB) func() int {
	t.Helper()
	ctx := context.Background()
	for _, m := range []db.Memory{
		{MemoryID: "m-alice", Memory: "Alice likes green tea", Topics: []string{"drinks", "preferences"}, UserID: "alice", AgentID: "echo", CreatedAt: 100},
		{MemoryID: "m-bob", Memory: "Bob lives in Zürich", Topics: []string{"location"}, UserID: "bob", TeamID: "crew", CreatedAt: 200},
	} {
		if _, err := d.UpsertMemory(ctx, &m); err != nil {
			t.Fatal(err)
		}
	}
	return func() int {
		t.Helper()
		_, total, err := d.ListMemories(ctx, db.MemoryFilter{Limit: 1, Page: 1})
		if err != nil {
			t.Fatal(err)
		}
		return total
	}
}

var jsonHeader = map[string]string{"Content-Type": "application/json"}

func TestMemories_CreateGetPatchDelete(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	seedMemories(t, f.db)
	res := do(t, "POST", f.url+"/memories", strings.NewReader(`{"memory":"Carol prefers short answers","topics":["style"],"user_id":"carol"}`), jsonHeader)
	if res.status != 200 {
		t.Fatalf("POST /memories = %d %s", res.status, res.body)
	}
	created := decode[map[string]any](t, res)
	id, _ := created["memory_id"].(string)
	if id == "" || created["memory"] != "Carol prefers short answers" || created["user_id"] != "carol" ||
		created["topics"].([]any)[0] != "style" || created["agent_id"] != nil || created["team_id"] != nil {
		t.Fatalf("created memory = %v", created)
	}
	if ts, ok := created["updated_at"].(string); !ok || !strings.HasSuffix(ts, "Z") {
		t.Errorf("updated_at = %v, want an ISO-8601 UTC string", created["updated_at"])
	}
	got := decode[map[string]any](t, get(t, f.url+"/memories/"+id, nil))
	if got["memory_id"] != id || got["memory"] != "Carol prefers short answers" {
		t.Errorf("GET /memories/%s = %v", id, got)
	}

	res = do(t, "PATCH", f.url+"/memories/"+id, strings.NewReader(`{"memory":"Carol prefers bullet points"}`), jsonHeader)
	if res.status != 200 || !contains(res.body, `"memory":"Carol prefers bullet points"`, `"topics":["style"]`, `"user_id":"carol"`) {
		t.Errorf("PATCH memory text = %d %s", res.status, res.body)
	}
	res = do(t, "PATCH", f.url+"/memories/"+id, strings.NewReader(`{"topics":[]}`), jsonHeader)
	if res.status != 200 || !contains(res.body, `"memory":"Carol prefers bullet points"`, `"topics":[]`) {
		t.Errorf("PATCH topics = %d %s", res.status, res.body)
	}
	if res := do(t, "PATCH", f.url+"/memories/"+id, strings.NewReader(`{"memory":"x","user_id":"dave"}`), jsonHeader); res.status != 404 {
		t.Errorf("PATCH naming another owner = %d %s, want 404", res.status, res.body)
	}
	if res := do(t, "PATCH", f.url+"/memories/missing", strings.NewReader(`{"memory":"x"}`), jsonHeader); res.status != 404 || res.detail(t) != "Memory with ID missing not found" {
		t.Errorf("PATCH missing = %d %s", res.status, res.body)
	}

	if res := do(t, "DELETE", f.url+"/memories/"+id, nil, nil); res.status != 204 || res.body != "" {
		t.Errorf("DELETE = %d %q", res.status, res.body)
	}
	if res := get(t, f.url+"/memories/"+id, nil); res.status != 404 || res.detail(t) != "Memory with ID "+id+" not found" {
		t.Errorf("deleted memory = %d %s", res.status, res.body)
	}
	if res := do(t, "DELETE", f.url+"/memories/"+id, nil, nil); res.status != 404 {
		t.Errorf("DELETE again = %d", res.status)
	}
	if res := get(t, f.url+"/memories/m-alice?user_id=bob", nil); res.status != 404 {
		t.Errorf("GET with a non-owner user_id = %d", res.status)
	}

	// Bulk delete with user_id only deletes that user's memories.
	res = do(t, "DELETE", f.url+"/memories", strings.NewReader(`{"memory_ids":["m-alice","m-bob"],"user_id":"bob"}`), jsonHeader)
	if res.status != 204 {
		t.Fatalf("bulk delete = %d %s", res.status, res.body)
	}
	if _, err := f.db.GetMemory(context.Background(), "m-alice"); err != nil {
		t.Errorf("bulk delete for bob removed alice's memory: %v", err)
	}
	if _, err := f.db.GetMemory(context.Background(), "m-bob"); err == nil {
		t.Error("bulk delete for bob kept bob's memory")
	}
}

func TestMemories_ListFiltersSortsAndPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	seedMemories(t, f.db)
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{"m-bob", "m-alice"}},
		{"?sort_by=created_at&sort_order=asc", []string{"m-alice", "m-bob"}},
		{"?user_id=alice", []string{"m-alice"}},
		{"?agent_id=echo", []string{"m-alice"}},
		{"?team_id=crew", []string{"m-bob"}},
		{"?topics=location,%20nothing", []string{"m-bob"}},
		{"?topics=drinks&topics=location", []string{"m-bob", "m-alice"}},
		{"?search_content=GREEN", []string{"m-alice"}},
		{"?search_content=z%C3%BCrich", []string{"m-bob"}},
		{"?limit=1&page=2&sort_by=created_at&sort_order=desc", []string{"m-alice"}},
		{"?limit=5&page=9", []string{}},
		{"?user_id=nobody", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			t.Parallel()
			res := get(t, f.url+"/memories"+tt.query, nil)
			if res.status != 200 {
				t.Fatalf("GET /memories%s = %d %s", tt.query, res.status, res.body)
			}
			page := decode[paginated[memoryView]](t, res)
			var ids []string
			for _, m := range page.Data {
				ids = append(ids, m.MemoryID)
			}
			if strings.Join(ids, ",") != strings.Join(tt.want, ",") {
				t.Errorf("ids = %v, want %v", ids, tt.want)
			}
			if !strings.Contains(res.body, `"data":[`) || !strings.Contains(res.body, `"total_pages"`) {
				t.Errorf("body %s is not a {data, meta} page", res.body)
			}
		})
	}
	page := decode[paginated[memoryView]](t, get(t, f.url+"/memories?limit=1", nil))
	if page.Meta.TotalCount != 2 || page.Meta.TotalPages != 2 || page.Meta.Limit != 1 || page.Meta.Page != 1 {
		t.Errorf("meta = %+v", page.Meta)
	}
}

func TestMemories_TopicsAndUserStats(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	seedMemories(t, f.db)
	if res := get(t, f.url+"/memory_topics", nil); res.status != 200 || res.body != `["drinks","location","preferences"]`+"\n" {
		t.Errorf("GET /memory_topics = %d %s", res.status, res.body)
	}
	if res := get(t, f.url+"/memory_topics?user_id=bob", nil); res.body != `["location"]`+"\n" {
		t.Errorf("GET /memory_topics?user_id=bob = %s", res.body)
	}
	stats := decode[paginated[map[string]any]](t, get(t, f.url+"/user_memory_stats?limit=1", nil))
	if stats.Meta.TotalCount != 2 || stats.Meta.TotalPages != 2 || len(stats.Data) != 1 {
		t.Fatalf("GET /user_memory_stats = %+v", stats)
	}
	if st := stats.Data[0]; st["total_memories"] != float64(1) || st["user_id"] == nil {
		t.Errorf("stats row = %v", st)
	} else if ts, ok := st["last_memory_updated_at"].(string); !ok || !strings.HasSuffix(ts, "Z") {
		t.Errorf("last_memory_updated_at = %v", st["last_memory_updated_at"])
	}
	empty := newFixture(t, Config{})
	if res := get(t, empty.url+"/memory_topics", nil); res.body != "[]\n" {
		t.Errorf("topics without memories = %s, want []", res.body)
	}
}

// TestMemories_BadInputIsRejectedCleanly sends malformed queries and bodies:
// each is a 4xx with {"detail"} and nothing is stored or changed.
func TestMemories_BadInputIsRejectedCleanly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	count := seedMemories(t, f.db)
	small := newFixture(t, Config{BodyLimit: 4 << 10})
	smallCount := seedMemories(t, small.db)
	huge := `{"memory":"` + strings.Repeat("a", 2<<20) + `","user_id":"u"}`
	tests := []struct {
		name, base, method, path, body string
		want                           int
	}{
		{"page zero", f.url, "GET", "/memories?page=0", "", 422},
		{"negative limit", f.url, "GET", "/memories?limit=-1", "", 422},
		{"limit too large", f.url, "GET", "/memories?limit=100000", "", 422},
		{"limit not a number", f.url, "GET", "/memories?limit=ten", "", 422},
		{"sort_by injection", f.url, "GET", "/memories?sort_by=" + url.QueryEscape("updated_at; DROP TABLE agno_memories"), "", 422},
		{"sort_by injection after a semicolon", f.url, "GET", "/memories?sort_by=updated_at;DROP%20TABLE%20agno_memories", "", 422},
		{"stats query with a semicolon", f.url, "GET", "/user_memory_stats?limit=1;page=2", "", 422},
		{"sort_by unknown column", f.url, "GET", "/memories?sort_by=memory", "", 422},
		{"sort_order injection", f.url, "GET", "/memories?sort_order=" + url.QueryEscape("desc, 1"), "", 422},
		{"stats page zero", f.url, "GET", "/user_memory_stats?page=0", "", 422},
		{"stats negative limit", f.url, "GET", "/user_memory_stats?limit=-1", "", 422},
		{"stats sort_by", f.url, "GET", "/user_memory_stats?sort_by=user_id", "", 422},
		{"unknown db", f.url, "GET", "/memories?db_id=nope", "", 404},
		{"create: not JSON", f.url, "POST", "/memories", `memory=hi`, 422},
		{"create: truncated JSON", f.url, "POST", "/memories", `{"memory":"hi","user_id":"u"`, 422},
		{"create: empty body", f.url, "POST", "/memories", ``, 422},
		{"create: unknown field", f.url, "POST", "/memories", `{"memory":"hi","user_id":"u","agent":"x"}`, 422},
		{"create: missing memory", f.url, "POST", "/memories", `{"user_id":"u","topics":["a"]}`, 422},
		{"create: blank memory", f.url, "POST", "/memories", `{"memory":"  ","user_id":"u"}`, 422},
		{"create: memory not a string", f.url, "POST", "/memories", `{"memory":42,"user_id":"u"}`, 422},
		{"create: topics not a list", f.url, "POST", "/memories", `{"memory":"hi","user_id":"u","topics":"a"}`, 422},
		{"create: memory too long", f.url, "POST", "/memories", `{"memory":"` + strings.Repeat("é", maxMemoryChars+1) + `","user_id":"u"}`, 422},
		{"create: trailing data", f.url, "POST", "/memories", `{"memory":"hi","user_id":"u"} {"memory":"again"}`, 422},
		{"create: JSON array", f.url, "POST", "/memories", `[{"memory":"hi","user_id":"u"}]`, 422},
		{"create: no user", f.url, "POST", "/memories", `{"memory":"hi"}`, 400},
		{"create: body over the route cap", f.url, "POST", "/memories", huge, 413},
		{"create: body over the server limit", small.url, "POST", "/memories", huge, 413},
		{"patch: not JSON", f.url, "PATCH", "/memories/m-alice", `{`, 422},
		{"patch: unknown field", f.url, "PATCH", "/memories/m-alice", `{"memory":"x","memory_id":"m-bob"}`, 422},
		{"patch: nothing to change", f.url, "PATCH", "/memories/m-alice", `{}`, 422},
		{"patch: blank memory", f.url, "PATCH", "/memories/m-alice", `{"memory":""}`, 422},
		{"patch: body over the server limit", small.url, "PATCH", "/memories/m-alice", huge, 413},
		{"bulk delete: no ids", f.url, "DELETE", "/memories", `{"memory_ids":[]}`, 422},
		{"bulk delete: missing ids", f.url, "DELETE", "/memories", `{}`, 422},
		{"bulk delete: ids not a list", f.url, "DELETE", "/memories", `{"memory_ids":"m-alice"}`, 422},
		{"bulk delete: not JSON", f.url, "DELETE", "/memories", `m-alice`, 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var res response
			if tt.method == "GET" {
				res = get(t, tt.base+tt.path, nil)
			} else {
				res = do(t, tt.method, tt.base+tt.path, strings.NewReader(tt.body), jsonHeader)
			}
			if res.status != tt.want {
				t.Errorf("%s %s = %d %s, want %d", tt.method, tt.path, res.status, res.body, tt.want)
			}
			if d := res.detail(t); d == "" {
				t.Error("empty detail")
			}
		})
	}
	t.Cleanup(func() {
		if n := count(); n != 2 {
			t.Errorf("memories after bad input = %d, want the 2 seeded", n)
		}
		if n := smallCount(); n != 2 {
			t.Errorf("memories after oversized bodies = %d, want the 2 seeded", n)
		}
		for _, d := range []*db.DB{f.db, small.db} {
			m, err := d.GetMemory(context.Background(), "m-alice")
			if err != nil || m.Memory != "Alice likes green tea" || len(m.Topics) != 2 {
				t.Errorf("m-alice after bad input = %+v, %v", m, err)
			}
		}
	})
}

// FuzzCreateMemoryBody: any body is answered without a panic, with 200 and a
// stored memory, or with a 4xx {"detail"} and nothing stored.
func FuzzCreateMemoryBody(f *testing.F) {
	for _, seed := range []string{
		`{"memory":"hi","user_id":"u"}`, `{"memory":"hi","topics":["a","b"],"user_id":"u"}`, `{`, `null`, `[]`,
		`{"memory":null,"user_id":"u"}`, `{"memory":"\ud800","user_id":"u"}`, "{\"memory\":\"\xff\",\"user_id\":\"u\"}",
		`{"memory":"a","user_id":"u","topics":[1]}`, `{"memory":"a"}{}`, `{"memory":"a","user_id":"u","extra":true}`,
	} {
		f.Add(seed)
	}
	d := db.New("fuzz-db", memory.New())
	s, err := New(Config{DBs: []*db.DB{d}, BodyLimit: 64 << 10, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body string) {
		_, before, err := d.ListMemories(context.Background(), db.MemoryFilter{Limit: 1, Page: 1})
		if err != nil {
			t.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "/memories", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		_, after, err := d.ListMemories(context.Background(), db.MemoryFilter{Limit: 1, Page: 1})
		if err != nil {
			t.Fatal(err)
		}
		res := response{status: rec.Code, body: rec.Body.String()}
		switch {
		case rec.Code == 200:
			if after != before+1 {
				t.Errorf("200 but %d → %d memories", before, after)
			}
		case rec.Code >= 400 && rec.Code < 500:
			res.detail(t)
			if after != before {
				t.Errorf("%d but %d → %d memories", rec.Code, before, after)
			}
		default:
			t.Errorf("status %d for %q: %s", rec.Code, body, rec.Body.String())
		}
	})
}

// TestMemories_RequireScopes: with scope authorization on, each memory route
// needs memories:read, memories:write or memories:delete (per-object grants
// cover only that memory).
func TestMemories_RequireScopes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{Auth: Auth{Authenticator: jwtAuthenticator(t, ""), Authorization: true}})
	seedMemories(t, f.db)
	tests := []struct {
		scopes             []string
		method, path, body string
		want               int
	}{
		{[]string{"sessions:read"}, "GET", "/memories", "", 403},
		{[]string{"memories:read"}, "GET", "/memories", "", 200},
		{[]string{"memories:read"}, "GET", "/memory_topics", "", 200},
		{[]string{"memories:read"}, "GET", "/user_memory_stats", "", 200},
		{[]string{"memories:m-alice:read"}, "GET", "/memories/m-alice", "", 200},
		{[]string{"memories:m-alice:read"}, "GET", "/memories/m-bob", "", 403},
		{[]string{"memories:m-alice:read"}, "GET", "/memories", "", 403},
		{[]string{"memories:read"}, "POST", "/memories", `{"memory":"x","user_id":"u"}`, 403},
		{[]string{"memories:write"}, "POST", "/memories", `{"memory":"x","user_id":"u"}`, 200},
		{[]string{"memories:write"}, "PATCH", "/memories/m-alice", `{"topics":["t"]}`, 200},
		{[]string{"memories:write"}, "DELETE", "/memories/m-alice", "", 403},
		{[]string{"memories:write"}, "DELETE", "/memories", `{"memory_ids":["m-alice"]}`, 403},
		{[]string{"memories:delete"}, "DELETE", "/memories/m-bob", "", 204},
		{[]string{"memories:*"}, "DELETE", "/memories", `{"memory_ids":["m-alice"]}`, 204},
	}
	for _, tt := range tests {
		h := bearer(hsToken(t, jwt.MapClaims{"sub": "u", "scopes": tt.scopes}))
		var body io.Reader
		if tt.body != "" {
			body = strings.NewReader(tt.body)
			h["Content-Type"] = "application/json"
		}
		if res := do(t, tt.method, f.url+tt.path, body, h); res.status != tt.want {
			t.Errorf("%v %s %s = %d %s, want %d", tt.scopes, tt.method, tt.path, res.status, res.body, tt.want)
		}
	}
}
