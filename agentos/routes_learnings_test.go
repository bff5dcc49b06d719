package agentos

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
)

// TestLearnings_SharedRowsAreReadableByAllChangeableByAdmins: a learning
// with no owner is read by any user; a scoped user changing or deleting it
// gets 403 (AgentOS's rule), an admin may.
func TestLearnings_SharedRowsAreReadableByAllChangeableByAdmins(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{UserIsolation: true, Auth: Auth{Authenticator: rsaAuthenticator(t)}})
	seedLearnings(t, f.db)
	bob := bearer(rsToken(t, "bob"))
	root := bearer(rsToken(t, "root", "agent_os:admin"))
	with := func(h map[string]string) map[string]string {
		out := map[string]string{"Content-Type": "application/json"}
		for k, v := range h {
			out[k] = v
		}
		return out
	}
	if res := get(t, f.url+"/learnings/l-shared", bob); res.status != 200 || !strings.Contains(res.body, "shared fact") {
		t.Fatalf("bob GET shared = %d %s", res.status, res.body)
	}
	if res := do(t, "PATCH", f.url+"/learnings/l-shared", strings.NewReader(`{"content":{"facts":["bob was here"]}}`), with(bob)); res.status != 403 {
		t.Fatalf("bob PATCH shared = %d %s", res.status, res.body)
	}
	if res := do(t, "DELETE", f.url+"/learnings/l-shared", nil, bob); res.status != 403 {
		t.Fatalf("bob DELETE shared = %d %s", res.status, res.body)
	}
	if res := do(t, "PATCH", f.url+"/learnings/l-shared", strings.NewReader(`{"content":{"facts":["curated"]},"metadata":{"by":"admin"}}`), with(root)); res.status != 200 ||
		!contains(res.body, "curated", `"agent_id":"echo"`, `"by":"admin"`) {
		t.Fatalf("admin PATCH shared = %d %s", res.status, res.body)
	}
	for body, want := range map[string]int{
		`{"content":null}`:                      422,
		`{"content":[1]}`:                       422,
		`{"content":{"x":1},"user_id":"carol"}`: 422,
	} {
		if res := do(t, "PATCH", f.url+"/learnings/l-bob", strings.NewReader(body), with(bob)); res.status != want {
			t.Errorf("PATCH %s = %d %s, want %d", body, res.status, res.body, want)
		}
	}
}

func TestLearnings_CreateUsesAgnoKeysAndRefusesDuplicates(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Config{})
	post := func(body string) response {
		return do(t, "POST", f.url+"/learnings", strings.NewReader(body), jsonHeader)
	}
	entity := `{"learning_type":"entity_memory","namespace":"user","user_id":"alice","entity_type":"company","entity_id":"acme","content":{"facts":["x"]}}`
	res := post(entity)
	if res.status != 201 || !contains(res.body, `"learning_id":"`+db.EntityLearningID("user", "alice", "company", "acme")+`"`, `"namespace":"user"`) {
		t.Fatalf("create entity = %d %s", res.status, res.body)
	}
	if res := post(entity); res.status != 409 || !strings.Contains(res.body, "PATCH") {
		t.Fatalf("duplicate = %d %s", res.status, res.body)
	}
	if res := post(`{"learning_type":"entity_memory","entity_type":"company","entity_id":"acme","content":{}}`); res.status != 201 ||
		!contains(res.body, `"learning_id":"entity_global_company_acme"`, `"namespace":"global"`) {
		t.Fatalf("global entity = %d %s", res.status, res.body)
	}
	if res := post(`{"learning_type":"user_profile","user_id":"alice","content":{"name":"Alice"}}`); res.status != 201 || !strings.Contains(res.body, `"learning_id":"user_profile_alice"`) {
		t.Fatalf("user profile = %d %s", res.status, res.body)
	}
	if res := post(`{"learning_type":"decision_log","content":{"d":1}}`); res.status != 201 {
		t.Fatalf("decision log = %d %s", res.status, res.body)
	}
	for body, want := range map[string]int{
		`{"learning_type":"entity_memory","namespace":"user","entity_type":"c","entity_id":"a","content":{}}`:                  422, // user key without a user
		`{"learning_type":"entity_memory","namespace":"user_0123456789abcdef","entity_type":"c","entity_id":"a","content":{}}`: 422,
		`{"learning_type":"user_profile","content":{}}`:                                                                        422,
		`{"content":{}}`:                         422,
		`{"learning_type":"x","content":"text"}`: 422,
		`{"learning_type":"x"}`:                  422,
	} {
		if res := post(body); res.status != want {
			t.Errorf("POST %s = %d %s, want %d", body, res.status, res.body, want)
		}
	}
	res = get(t, f.url+"/learnings/users?sort_by=last_learning_updated_at&sort_order=desc", nil)
	if res.status != 200 || !contains(res.body, `"user_id":"alice"`, `"total_count":1`) {
		t.Fatalf("users = %d %s", res.status, res.body)
	}
	// The order is fixed: an ascending order would be ignored.
	if res := get(t, f.url+"/learnings/users?sort_order=asc", nil); res.status != 422 || !strings.Contains(res.detail(t), "sort_order must be desc") {
		t.Errorf("users sort_order=asc = %d %s, want 422", res.status, res.body)
	}
	if res := do(t, "DELETE", f.url+"/learnings/users/alice?learning_type=user_profile", nil, nil); res.status != 204 {
		t.Fatalf("delete typed = %d %s", res.status, res.body)
	}
	if res := get(t, f.url+"/learnings?user_id=alice", nil); !contains(res.body, `"total_count":1`, "entity_user_") {
		t.Fatalf("alice's learnings after the typed delete = %s", res.body)
	}
}

// FuzzCreateLearningBody: any body is answered without a panic, with 201
// and one more stored learning, or with a 4xx {"detail"} and none.
func FuzzCreateLearningBody(f *testing.F) {
	for _, seed := range []string{
		`{"learning_type":"entity_memory","namespace":"user","user_id":"u","entity_type":"c","entity_id":"a","content":{"x":1}}`,
		`{"learning_type":"decision_log","content":{}}`, `{"learning_type":"user_profile","content":{}}`, `{`, `null`, `[]`,
		`{"learning_type":"x","content":"\ud800"}`, "{\"learning_type\":\"\xff\",\"content\":{}}", `{"learning_type":"x","content":{},"metadata":[1]}`,
		`{"learning_type":"entity_memory","namespace":"user_0123456789abcdef","entity_type":"c","entity_id":"a","content":{}}`,
	} {
		f.Add(seed)
	}
	d := db.New("fuzz-db", memory.New())
	s, err := New(Config{DBs: []*db.DB{d}, BodyLimit: 64 << 10, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	count := func(t *testing.T) int {
		_, n, err := d.ListLearnings(context.Background(), db.LearningFilter{Limit: 1, Page: 1})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	f.Fuzz(func(t *testing.T, body string) {
		before := count(t)
		req := httptest.NewRequest(http.MethodPost, "/learnings", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		after := count(t)
		res := response{status: rec.Code, body: rec.Body.String()}
		switch {
		case rec.Code == 201:
			if after != before+1 {
				t.Errorf("201 but %d → %d learnings", before, after)
			}
		case rec.Code >= 400 && rec.Code < 500:
			res.detail(t)
			if after != before {
				t.Errorf("%d but %d → %d learnings", rec.Code, before, after)
			}
		default:
			t.Errorf("status %d for %q: %s", rec.Code, body, rec.Body.String())
		}
	})
}
