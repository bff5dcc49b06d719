package agentos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentryhq/agentry/db"
)

// TestListRoutes_RejectBadSortNamingTheAllowedValues: every listing route
// answers 422 for a sort_by or sort_order it does not offer (the run listings
// used to ignore both and answer 200), and the detail names what it offers.
func TestListRoutes_RejectBadSortNamingTheAllowedValues(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	injected := url.QueryEscape("created_at;DROP TABLE agno_runs")
	tests := []struct {
		path, query, allowed string
	}{
		{"/sessions", "sort_by=" + injected, "created_at, updated_at"},
		{"/sessions", "sort_order=sideways", "asc or desc"},
		{"/memories", "sort_by=" + injected, "updated_at, created_at"},
		{"/agents/echo/runs", "sort_by=" + injected, "created_at, run_index, updated_at"},
		{"/agents/echo/runs", "sort_by=status", "created_at, run_index, updated_at"},
		{"/agents/echo/runs", "sort_order=" + url.QueryEscape("desc, 1"), "asc or desc"},
		{"/sessions/s-alice/runs", "sort_by=" + injected, "run_index, created_at, updated_at"},
		{"/sessions/s-alice/runs", "sort_order=up", "asc or desc"},
		{"/user_memory_stats", "sort_by=user_id", "not supported"},
		{"/user_memory_stats", "sort_order=asc", "not supported"},
		{"/memory_topics", "sort_by=topic", "not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.path+"?"+tt.query, func(t *testing.T) {
			t.Parallel()
			res := get(t, f.url+tt.path+"?"+tt.query, nil)
			if res.status != 422 || !strings.Contains(res.detail(t), tt.allowed) {
				t.Errorf("GET %s?%s = %d %s, want 422 naming %q", tt.path, tt.query, res.status, res.body, tt.allowed)
			}
		})
	}
}

func TestRunListings_SortByAndSortOrderApply(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	for _, msg := range []string{"second", "third"} {
		if res := postForm(t, f.url+"/agents/echo/runs", map[string]string{"message": msg, "stream": "false", "session_id": "s-alice", "user_id": "alice"}, nil); res.status != 200 {
			t.Fatalf("run = %d %s", res.status, res.body)
		}
	}
	inputs := func(path string) string {
		var got []string
		for _, r := range decode[[]map[string]any](t, get(t, f.url+path, nil)) {
			got = append(got, fmt.Sprint(r["run_input"]))
		}
		return strings.Join(got, ",")
	}
	for path, want := range map[string]string{
		"/sessions/s-alice/runs":                                                 "hello from alice,second,third",
		"/sessions/s-alice/runs?sort_order=desc":                                 "third,second,hello from alice",
		"/agents/echo/runs?session_id=s-alice&sort_by=run_index&sort_order=desc": "third,second,hello from alice",
	} {
		if got := inputs(path); got != want {
			t.Errorf("GET %s = %s, want %s", path, got, want)
		}
	}
}

// TestQueries_MalformedQueryStringIs422: Go's url.Values drops a pair with a
// ';' or a bad %-escape; a route reading the rest would widen the answer
// (?user_id=alice; listed every user's sessions), so such queries are refused.
func TestQueries_MalformedQueryStringIs422(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	for _, path := range []string{
		"/sessions?user_id=alice;",
		"/sessions?user_id=alice;&limit=5",
		"/sessions?sort_by=created_at;DROP%20TABLE%20agno_runs",
		"/agents/echo/runs?session_id=s-alice;",
		"/sessions/s-alice/runs?user_id=bob;",
		"/memories?user_id=%zz",
		"/health?x=;",
	} {
		res := get(t, f.url+path, nil)
		if res.status != 422 || !strings.Contains(res.detail(t), "invalid query string") {
			t.Errorf("GET %s = %d %s, want 422", path, res.status, res.body)
		}
	}
	if page := decode[paginated[map[string]any]](t, get(t, f.url+"/sessions?user_id=alice", nil)); page.Meta.TotalCount != 1 {
		t.Errorf("a well-formed filter lists %d sessions, want 1", page.Meta.TotalCount)
	}
}

// TestBodies_InvalidUTF8AndOversizedIdsAndTopicsAre422: nothing of it is
// stored (it used to be stored with U+FFFD, a 100 KB user id, 100,000 topics).
func TestBodies_InvalidUTF8AndOversizedIdsAndTopicsAre422(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	count := seedMemories(t, f.db)
	longID := strings.Repeat("u", db.MaxUserIDBytes+1)
	topics := func(n int) string {
		ts := make([]string, n)
		for i := range ts {
			ts[i] = fmt.Sprintf("%q", fmt.Sprint("t", i))
		}
		return "[" + strings.Join(ts, ",") + "]"
	}
	tests := []struct {
		name, method, path, body, detail string
	}{
		{"session name not UTF-8", "POST", "/sessions", "{\"session_id\":\"bad-utf8\",\"session_name\":\"caf\xe9\"}", "UTF-8"},
		{"session state not UTF-8", "PATCH", "/sessions/s-alice", "{\"session_state\":{\"k\":\"\xff\"}}", "UTF-8"},
		{"rename not UTF-8", "POST", "/sessions/s-alice/rename", "{\"session_name\":\"\xc3\x28\"}", "UTF-8"},
		{"memory not UTF-8", "POST", "/memories", "{\"memory\":\"caf\xe9\",\"user_id\":\"carol\"}", "UTF-8"},
		{"memory patch not UTF-8", "PATCH", "/memories/m-alice", "{\"memory\":\"\xff\"}", "UTF-8"},
		{"session user_id too long", "POST", "/sessions", `{"session_id":"long-user","user_id":"` + longID + `"}`, "user_id must be at most 255 bytes"},
		{"session agent_id too long", "POST", "/sessions", `{"session_id":"long-agent","agent_id":"` + longID + `"}`, "agent_id must be at most 255 bytes"},
		{"memory user_id too long", "POST", "/memories", `{"memory":"hi","user_id":"` + longID + `"}`, "user_id must be at most 255 bytes"},
		{"too many topics", "POST", "/memories", `{"memory":"hi","user_id":"carol","topics":` + topics(db.MaxMemoryTopics+1) + `}`, "at most 100 topics"},
		{"too many topics on patch", "PATCH", "/memories/m-alice", `{"topics":` + topics(db.MaxMemoryTopics+1) + `}`, "at most 100 topics"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := do(t, tt.method, f.url+tt.path, strings.NewReader(tt.body), jsonHeader)
			if res.status != 422 || !strings.Contains(res.detail(t), tt.detail) {
				t.Errorf("%s %s = %d %s, want 422 naming %q", tt.method, tt.path, res.status, res.body, tt.detail)
			}
		})
	}
	t.Run("a run form user_id too long", func(t *testing.T) {
		t.Parallel()
		res := postForm(t, f.url+"/agents/echo/runs", map[string]string{"message": "hi", "stream": "false", "user_id": longID}, nil)
		if res.status != 422 || !strings.Contains(res.detail(t), "user_id") {
			t.Errorf("run = %d %s", res.status, res.body)
		}
	})
	t.Run("limits still allow the maximum", func(t *testing.T) {
		t.Parallel()
		body := `{"memory":"at the limits","user_id":"` + longID[1:] + `","topics":` + topics(db.MaxMemoryTopics) + `}`
		if res := do(t, "POST", f.url+"/memories", strings.NewReader(body), jsonHeader); res.status != 200 {
			t.Errorf("memory at the limits = %d %s", res.status, res.body)
		}
	})
	t.Cleanup(func() {
		ctx := context.Background()
		if n := count(); n != 3 {
			t.Errorf("%d memories, want the 2 seeded and the one at the limits", n)
		}
		for _, id := range []string{"bad-utf8", "long-user", "long-agent"} {
			if _, err := f.db.GetSession(ctx, id); err == nil {
				t.Errorf("session %s was stored", id)
			}
		}
		s, err := f.db.GetSession(ctx, "s-alice")
		if err != nil || strings.Contains(string(s.SessionData), "\ufffd") || strings.Contains(string(s.SessionData), `\ufffd`) {
			t.Errorf("s-alice after bad input = %+v, %v", s, err)
		}
		m, err := f.db.GetMemory(ctx, "m-alice")
		if err != nil || m.Memory != "Alice likes green tea" || len(m.Topics) != 2 {
			t.Errorf("m-alice after bad input = %+v, %v", m, err)
		}
	})
}

// FuzzDecodeJSONBody: any body decodes into valid UTF-8 strings or fails with
// a 4xx httpError (an empty body fails wrapping io.EOF).
func FuzzDecodeJSONBody(f *testing.F) {
	f.Add(`{"session_name":"café","session_state":{"k":[1,2]}}`)
	f.Add("{\"session_name\":\"caf\xe9\"}")
	f.Add(`{"session_name":"\ud800"}`)
	f.Add(`{"session_name":"x"} trailing`)
	f.Add(`{"unknown":1}`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequest(http.MethodPatch, "/sessions/s", strings.NewReader(body))
		var req patchSessionRequest
		err := decodeJSONBody(r, &req)
		if err != nil {
			var he *httpError
			if !errors.Is(err, io.EOF) && (!errors.As(err, &he) || he.Status < 400 || he.Status > 499 || he.Detail == "") {
				t.Fatalf("error %v is not a 4xx HTTPError", err)
			}
			return
		}
		if !utf8.ValidString(body) {
			t.Fatalf("accepted a body that is not UTF-8: %q", body)
		}
	})
}
