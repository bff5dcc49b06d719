package agentos

import (
	"strings"
	"testing"
)

// TestURL_NULOrNonUTF8IdsAndFiltersAre422: an id in the path or a filter in
// the query holding a NUL (%00) or a byte that is not UTF-8 (%ff, %FF)
// reached Postgres, which refuses it in a text parameter: a 500 on every
// route taking an id or a user_id/agent_id filter. It is a 422 naming the
// problem on every database; UTF-8 text (café) still reaches the route.
func TestURL_NULOrNonUTF8IdsAndFiltersAre422(t *testing.T) {
	t.Parallel()
	for name, open := range sqliteAndPostgres {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			u := pagedServer(t, open(t))
			for _, bad := range []string{"%00", "a%00b", "%FF", "%ff", "%C3%28"} {
				for _, req := range []struct{ method, path string }{
					{"GET", "/sessions/ID"}, {"PATCH", "/sessions/ID"}, {"DELETE", "/sessions/ID"},
					{"GET", "/sessions/ID/runs"}, {"GET", "/sessions/s1/runs/ID"}, {"GET", "/sessions/ID/media/k"},
					{"GET", "/memories/ID"}, {"DELETE", "/memories/ID"}, {"GET", "/agents/echo/runs/ID"},
					{"GET", "/approvals/ID"}, {"GET", "/learnings/ID"}, {"PATCH", "/learnings/ID"},
					{"GET", "/eval-runs/ID"}, {"GET", "/schedules/ID"}, {"DELETE", "/schedules/ID"},
					{"GET", "/schedules/ID/runs"}, {"GET", "/components/ID"}, {"DELETE", "/components/ID/configs/1"},
					{"GET", "/traces/ID"},
				} {
					path := strings.ReplaceAll(req.path, "ID", bad)
					res := do(t, req.method, u+path, strings.NewReader(`{}`), jsonHeader)
					if res.status != 422 || !strings.Contains(res.detail(t), "invalid URL path") {
						t.Errorf("%s %s = %d %s, want 422", req.method, path, res.status, res.body)
					}
				}
				for _, path := range []string{
					"/sessions?user_id=ID", "/memories?user_id=ID", "/memories?agent_id=ID", "/agents/echo/runs?user_id=ID",
					"/memory_topics?user_id=ID", "/approvals?agent_id=ID", "/approvals/count?user_id=ID",
					"/learnings?user_id=ID", "/learnings/users?user_id=ID", "/eval-runs?agent_id=ID",
					"/traces?user_id=ID", "/trace_session_stats?agent_id=ID", "/metrics?user_id=ID", "/sessions?ID=x",
				} {
					path = strings.ReplaceAll(path, "ID", bad)
					if res := get(t, u+path, nil); res.status != 422 || !strings.Contains(res.detail(t), "must be UTF-8 text without NUL") {
						t.Errorf("GET %s = %d %s, want 422", path, res.status, res.body)
					}
				}
			}
			if res := get(t, u+"/sessions/caf%C3%A9", nil); res.status != 404 {
				t.Errorf("GET /sessions/café = %d %s, want 404", res.status, res.body)
			}
			if res := get(t, u+"/sessions?user_id=caf%C3%A9", nil); res.status != 200 || !strings.Contains(res.body, `"total_count":0`) {
				t.Errorf("GET /sessions?user_id=café = %d %s, want an empty page", res.status, res.body)
			}
		})
	}
}

// TestTraceSearch_DurationPastInt64Is400: a duration_ms comparison with a
// number past the int64 range (1e300, 9.3e18) reached Postgres as a float
// it could not encode for the bigint column: a 500. It is now the 400
// "Invalid filter expression" of every other bad filter; fractions and
// numbers in range still search.
func TestTraceSearch_DurationPastInt64Is400(t *testing.T) {
	t.Parallel()
	for name, open := range sqliteAndPostgres {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			u := pagedServer(t, open(t))
			search := func(filter string) response {
				return do(t, "POST", u+"/traces/search", strings.NewReader(`{"filter":`+filter+`}`), jsonHeader)
			}
			for _, v := range []string{"1e300", "9.3e18", "9223372036854775808", "-1e300"} {
				for _, filter := range []string{
					`{"op":"GT","key":"duration_ms","value":` + v + `}`,
					`{"op":"IN","key":"duration_ms","values":[1,` + v + `]}`,
				} {
					if res := search(filter); res.status != 400 || !strings.Contains(res.detail(t), "duration_ms: "+v+" is out of range") {
						t.Errorf("search %s = %d %s, want 400", filter, res.status, res.body)
					}
				}
			}
			for _, v := range []string{"1.5", "9.2e18", "-9.2e18", "9223372036854775807"} {
				if res := search(`{"op":"LTE","key":"duration_ms","value":` + v + `}`); res.status != 200 {
					t.Errorf("search duration_ms <= %s = %d %s", v, res.status, res.body)
				}
			}
		})
	}
}
