package agentos

import (
	"context"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db/dbtest/testdbs"
)

// encodeURIComponent escapes s as browsers' encodeURIComponent does.
func encodeURIComponent(s string) string {
	const keep = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'()"
	var b strings.Builder
	for _, c := range []byte(s) {
		if strings.IndexByte(keep, c) >= 0 {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + string("0123456789ABCDEF"[c>>4]) + string("0123456789ABCDEF"[c&15]))
		}
	}
	return b.String()
}

// TestURLParams_EscapedIdsReachTheirObjects: a session whose id holds ':',
// '+', '@', '=' or '/' (user:1, a+b) was a 404 ("Session with ID user%3A1
// not found") to every client that escapes path segments as
// encodeURIComponent does: chi routes such a path on its raw form and
// handed the handlers the id still escaped. The session is now read,
// listed, renamed and deleted by its escaped id; a '%' in an id is decoded
// once, and a lowercase escape works as an uppercase one.
func TestURLParams_EscapedIdsReachTheirObjects(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	u := pagedServer(t, d)
	for _, tt := range []struct{ id, path string }{
		{"user:1", ""}, {"a+b", ""}, {"a@b.example", ""}, {"x=y", ""}, {"team/42", ""}, {"100%:x", ""},
		{"café:1", "caf%c3%a9%3a1"},
	} {
		path := tt.path
		if path == "" {
			path = encodeURIComponent(tt.id)
		}
		res := postForm(t, u+"/agents/echo/runs", map[string]string{"message": "hi", "stream": "false", "session_id": tt.id, "user_id": "alice"}, nil)
		if res.status != 200 {
			t.Fatalf("run in %q = %d %s", tt.id, res.status, res.body)
		}
		if res := get(t, u+"/sessions/"+path, nil); res.status != 200 || decode[map[string]any](t, res)["session_id"] != tt.id {
			t.Errorf("GET /sessions/%s = %d %s, want session %q", path, res.status, res.body, tt.id)
		}
		if res := get(t, u+"/sessions/"+path+"/runs", nil); res.status != 200 || len(decode[[]map[string]any](t, res)) != 1 {
			t.Errorf("GET /sessions/%s/runs = %d %s, want its run", path, res.status, res.body)
		}
		if res := do(t, "POST", u+"/sessions/"+path+"/rename", strings.NewReader(`{"session_name":"renamed"}`), jsonHeader); res.status != 200 {
			t.Errorf("rename /sessions/%s = %d %s", path, res.status, res.body)
		}
		if res := do(t, "DELETE", u+"/sessions/"+path, nil, nil); res.status != 204 {
			t.Errorf("DELETE /sessions/%s = %d %s", path, res.status, res.body)
		}
		if _, err := d.GetSession(context.Background(), tt.id); err == nil {
			t.Errorf("session %q is still stored", tt.id)
		}
	}
	// A literal %41 in an id is not decoded twice into "A".
	if res := get(t, u+"/sessions/"+encodeURIComponent("s:%41"), nil); res.status != 404 || res.detail(t) != "Session with ID s:%41 not found" {
		t.Errorf("GET a missing id with a literal %%41 = %d %s", res.status, res.body)
	}
}
