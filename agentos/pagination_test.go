package agentos

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"
)

var sessionRules = pageRules{SortColumns: []string{"created_at", "updated_at"}, MaxLimit: 100}

func TestParsePageQuery_Defaults(t *testing.T) {
	t.Parallel()
	got, err := parsePageQuery(url.Values{}, sessionRules)
	if err != nil {
		t.Fatal(err)
	}
	want := pageQuery{Limit: 20, Page: 1, SortBy: "created_at", SortOrder: "desc"}
	if got != want {
		t.Errorf("= %+v, want %+v", got, want)
	}
	got, err = parsePageQuery(url.Values{"limit": {"100"}, "page": {"3"}, "sort_by": {"updated_at"}, "sort_order": {"ASC"}}, sessionRules)
	if err != nil || got != (pageQuery{Limit: 100, Page: 3, SortBy: "updated_at", SortOrder: "asc"}) {
		t.Errorf("= %+v, %v", got, err)
	}
}

func TestParsePageQuery_RejectsBadValuesWith422(t *testing.T) {
	t.Parallel()
	tests := map[string]url.Values{
		"limit zero":          {"limit": {"0"}},
		"limit negative":      {"limit": {"-1"}},
		"limit over max":      {"limit": {"101"}},
		"limit not a number":  {"limit": {"ten"}},
		"limit overflow":      {"limit": {"99999999999999999999"}},
		"page zero":           {"page": {"0"}},
		"page negative":       {"page": {"-3"}},
		"page float":          {"page": {"1.5"}},
		"sort_by injection":   {"sort_by": {"created_at;drop table agno_sessions"}},
		"sort_by quoted":      {"sort_by": {"created_at desc, (select 1)"}},
		"sort_by other":       {"sort_by": {"session_data"}},
		"sort_by case":        {"sort_by": {"CREATED_AT"}},
		"sort_order sideways": {"sort_order": {"sideways"}},
		"sort_order injected": {"sort_order": {"desc; --"}},
	}
	for name, q := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, err := parsePageQuery(q, sessionRules)
			if status, detail := statusOf(err); err == nil || status != http.StatusUnprocessableEntity || detail == "" {
				t.Fatalf("err = %v (status %d)", err, status)
			}
		})
	}
	if _, err := parsePageQuery(url.Values{"sort_by": {"created_at"}}, pageRules{}); err == nil {
		t.Error("sort_by accepted where no sorting is offered")
	}
}

func TestWritePage_ShapeOverHTTP(t *testing.T) {
	t.Parallel()
	ts, _ := testServer(t, Config{}, func(s *Server) {
		s.router.Get("/items", func(w http.ResponseWriter, r *http.Request) {
			q, err := parsePageQuery(r.URL.Query(), sessionRules)
			if err != nil {
				writeErr(w, r, s.log, err)
				return
			}
			var items []string
			if q.Page == 1 {
				items = []string{"a", "b"}
			}
			writePage(w, items, q, 45, 1234*time.Microsecond)
		})
	})
	tests := []struct {
		query  string
		status int
		want   string
	}{
		{"?limit=2", 200, `{"data":["a","b"],"meta":{"page":1,"limit":2,"total_pages":23,"total_count":45,"search_time_ms":1.23}}`},
		{"?limit=20&page=9", 200, `{"data":[],"meta":{"page":9,"limit":20,"total_pages":3,"total_count":45,"search_time_ms":1.23}}`},
		{"?limit=-1", 422, ""},
		{"?page=0", 422, ""},
		{"?sort_by=" + url.QueryEscape("created_at;drop table x"), 422, ""},
	}
	for _, tt := range tests {
		res := get(t, ts.URL+"/items"+tt.query, nil)
		if res.status != tt.status {
			t.Errorf("%s: status %d %s", tt.query, res.status, res.body)
			continue
		}
		if tt.status != 200 {
			res.detail(t)
			continue
		}
		var got, want any
		_ = json.Unmarshal([]byte(res.body), &got)
		_ = json.Unmarshal([]byte(tt.want), &want)
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if string(gb) != string(wb) {
			t.Errorf("%s: body %s, want %s", tt.query, res.body, tt.want)
		}
	}
}
