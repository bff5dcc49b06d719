package agentos

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
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
