package agentos

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/run"
)

func TestGetSessionMedia_StreamsOnlyTheOwnersObjects(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := db.New("db", memory.New())
	for _, s := range []db.Session{{SessionID: "s-alice", UserID: "alice"}, {SessionID: "s-bob", UserID: "bob"}} {
		s.SessionType = run.TypeAgent
		if _, err := d.UpsertSession(ctx, &s); err != nil {
			t.Fatal(err)
		}
	}
	store, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	img := bytes.Repeat([]byte{0xff, 0xd8, 'x'}, 1000)
	ref, err := media.Put(ctx, store, "s-alice", "image", "image/jpeg", "a.jpg", img)
	if err != nil {
		t.Fatal(err)
	}
	bobRef, err := media.Put(ctx, store, "s-bob", "image", "image/jpeg", "b.jpg", []byte("bob's"))
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Auth: Auth{Authenticator: rsaAuthenticator(t)}, UserIsolation: true, DBs: []*db.DB{d}, MediaStorage: store}, nil)
	as := func(user string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + rsToken(t, user)}
	}

	res := get(t, ts.URL+"/sessions/s-alice/media/"+ref.MediaID, as("alice"))
	if res.status != http.StatusOK || res.body != string(img) || res.header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("owner: %d %q, %d bytes", res.status, res.header.Get("Content-Type"), len(res.body))
	}
	for name, url := range map[string]string{
		"another user":                  ts.URL + "/sessions/s-alice/media/" + ref.MediaID,
		"own session, other's key name": ts.URL + "/sessions/s-bob/media/" + ref.MediaID,
	} {
		if res := get(t, url, as("bob")); res.status != http.StatusNotFound || contains(res.body, "xxx") {
			t.Errorf("%s: %d", name, res.status)
		}
	}
	for name, key := range map[string]string{
		"bob's object through alice's session": bobRef.MediaID,
		"traversal":                            "..%2F..%2Fetc%2Fpasswd",
		"encoded storage key":                  "sessions%2Fx%2F" + ref.MediaID,
		"unknown":                              "0000000000000000000000000000000000000000000000000000000000000000.jpg",
	} {
		if res := get(t, ts.URL+"/sessions/s-alice/media/"+key, as("alice")); res.status != http.StatusNotFound {
			t.Errorf("%s: %d %s", name, res.status, res.body)
		}
	}
	if res := get(t, ts.URL+"/sessions/s-alice/media/"+ref.MediaID, nil); res.status != http.StatusUnauthorized {
		t.Errorf("no token: %d", res.status)
	}
}

func TestGetSessionMedia_WithoutStorageIs404(t *testing.T) {
	t.Parallel()
	d := db.New("db", memory.New())
	if _, err := d.UpsertSession(context.Background(), &db.Session{SessionID: "s", SessionType: run.TypeAgent}); err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{DBs: []*db.DB{d}}, nil)
	if res := get(t, ts.URL+"/sessions/s/media/"+string(bytes.Repeat([]byte("a"), 64)), nil); res.status != http.StatusNotFound {
		t.Fatalf("status %d", res.status)
	}
}

// A client names an uploaded file: its extension picks the served type, so
// HTML, SVG or XML must not render in the server's origin (stored XSS).
// Only types a browser shows without running scripts are served inline;
// the rest are downloads.
func TestGetSessionMedia_ActiveContentIsADownloadNotInline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := db.New("db", memory.New())
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent}); err != nil {
		t.Fatal(err)
	}
	store, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{DBs: []*db.DB{d}, MediaStorage: store}, nil)
	script := []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(document.domain)</script></svg>`)
	for _, c := range []struct {
		mimeType, filename string
		inline             bool
	}{
		{"text/html", "page.html", false},
		{"text/html", "", false},
		{"image/svg+xml", "logo.svg", false},
		{"application/xhtml+xml", "a.xhtml", false},
		{"text/xml", "a.xml", false},
		{"application/javascript", "a.js", false},
		{"image/png", "cat.png", true},
		{"image/jpeg", "photo.JPG", true},
		{"audio/wav", "a.wav", true},
		{"video/mp4", "v.mp4", true},
		{"application/pdf", "doc.pdf", true},
		{"text/plain", "notes.txt", true},
	} {
		ref, err := media.Put(ctx, store, "s", "file", c.mimeType, c.filename, append(script, c.filename...))
		if err != nil {
			t.Fatal(err)
		}
		res := get(t, ts.URL+"/sessions/s/media/"+ref.MediaID, nil)
		if res.status != http.StatusOK {
			t.Fatalf("%s: %d %s", ref.MediaID, res.status, res.body)
		}
		disp, ctype := res.header.Get("Content-Disposition"), res.header.Get("Content-Type")
		if got := !strings.HasPrefix(disp, "attachment"); got != c.inline {
			t.Errorf("%s %q: served as %q with Content-Disposition %q, want inline=%v", c.mimeType, c.filename, ctype, disp, c.inline)
		}
		if res.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: no nosniff", c.filename)
		}
	}
}
