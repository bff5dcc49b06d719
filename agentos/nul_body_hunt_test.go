package agentos

import (
	"context"
	"strings"
	"testing"
)

// TestJSONBodies_NULInAStringIs422: a JSON body holding "\u0000" in a
// string reached the database; Postgres stores no NUL in text or jsonb, so
// it was a 500 there (the eval route's detail even quoted Postgres's
// error), and it was stored as given on SQLite. It is a 422 on every
// database and nothing is stored; an escaped backslash before "u0000" is
// text, not a NUL, and still goes through.
func TestJSONBodies_NULInAStringIs422(t *testing.T) {
	t.Parallel()
	for name, open := range sqliteAndPostgres {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			u := pagedServer(t, d)
			for _, tt := range []struct{ method, path, body string }{
				{"POST", "/sessions", `{"session_id":"n1","session_name":"a\u0000b"}`},
				{"PATCH", "/sessions/s1", `{"session_state":{"k\u0000":"v"}}`},
				{"PATCH", "/sessions/s1", `{"session_state":{"k":["\u0000"]}}`},
				{"POST", "/sessions/s1/rename", `{"session_name":"a\u0000b"}`},
				{"POST", "/memories", `{"memory":"a\u0000b","user_id":"u"}`},
				{"DELETE", "/memories", `{"memory_ids":["a\u0000"]}`},
				{"DELETE", "/sessions", `{"session_ids":["a\u0000"],"session_types":["agent"]}`},
				{"POST", "/learnings", `{"learning_type":"x","content":{"a":"\u0000"},"user_id":"u"}`},
				{"POST", "/eval-runs", `{"eval_type":"performance","agent_id":"echo","input":"a\u0000"}`},
				{"POST", "/traces/search", `{"filter":{"op":"EQ","key":"user_id","value":"\u0000"}}`},
			} {
				res := do(t, tt.method, u+tt.path, strings.NewReader(tt.body), jsonHeader)
				if res.status != 422 || !strings.Contains(res.detail(t), "must not contain NUL") {
					t.Errorf("%s %s %s = %d %s, want 422", tt.method, tt.path, tt.body, res.status, res.body)
				}
			}
			ctx := context.Background()
			if _, err := d.GetSession(ctx, "n1"); err == nil {
				t.Error("session n1 was stored")
			}
			if s, err := d.GetSession(ctx, "s1"); err != nil || strings.Contains(string(s.SessionData), "a\x00b") || strings.Contains(string(s.SessionData), `\u0000`) {
				t.Errorf("s1 after the bad bodies = %+v, %v", s, err)
			}
			body := `{"session_name":"C:\\u0000 drive"}`
			if res := do(t, "POST", u+"/sessions/s1/rename", strings.NewReader(body), jsonHeader); res.status != 200 || !strings.Contains(res.body, `C:\\u0000 drive`) {
				t.Errorf("rename to an escaped backslash = %d %s", res.status, res.body)
			}
		})
	}
}

// TestRunForm_NULInAJSONFieldIs422: a run's session_state or metadata
// holding "\u0000" could not be saved on Postgres: a 503 telling the client
// to retry (it never succeeds) for a run, a 500 for a background run. Every
// JSON field of the run form is now a 422 on every database, as a NUL in
// message already was, and no run is started.
func TestRunForm_NULInAJSONFieldIs422(t *testing.T) {
	t.Parallel()
	for name, open := range sqliteAndPostgres {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			u := pagedServer(t, d)
			for _, field := range []string{"session_state", "metadata", "dependencies", "output_schema"} {
				for _, background := range []string{"false", "true"} {
					fields := map[string]string{"message": "hi", "stream": "false", "background": background,
						"session_id": "nul-" + field + "-" + background, field: `{"k":"a\u0000b"}`}
					res := postForm(t, u+"/agents/echo/runs", fields, nil)
					if res.status != 422 || !strings.Contains(res.detail(t), field+" must not contain NUL") {
						t.Errorf("run with a NUL in %s (background %s) = %d %s, want 422", field, background, res.status, res.body)
					}
					if _, err := d.GetSession(context.Background(), fields["session_id"]); err == nil {
						t.Errorf("session %s was stored", fields["session_id"])
					}
				}
			}
			fields := map[string]string{"message": "hi", "stream": "false", "session_state": `{"path":"C:\\u0000"}`}
			if res := postForm(t, u+"/agents/echo/runs", fields, nil); res.status != 200 {
				t.Errorf("run with an escaped backslash = %d %s", res.status, res.body)
			}
		})
	}
}
