package agentos

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
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
	ref, err := media.Put(ctx, store, media.Owner{DB: d.ID, User: "alice", Session: "s-alice"}, "image", "image/jpeg", "a.jpg", img)
	if err != nil {
		t.Fatal(err)
	}
	bobRef, err := media.Put(ctx, store, media.Owner{DB: d.ID, User: "bob", Session: "s-bob"}, "image", "image/jpeg", "b.jpg", []byte("bob's"))
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
		ref, err := media.Put(ctx, store, media.Owner{DB: d.ID, Session: "s"}, "file", c.mimeType, c.filename, append(script, c.filename...))
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

// One AgentOS serving two databases: bob, naming in db2 the session id alice
// uses in db1, gets a session of his own, not alice's media. Media used to
// be keyed by the session id alone: bob's route then read alice's object
// (its name is the content's hash, so anyone who has the same bytes or
// guesses them knows it). Objects stored before media were keyed by owner
// (under the session id alone) are still served to the session whose runs
// reference them, and to nobody else.
func TestGetSessionMedia_SameSessionIDInAnotherDatabaseIsNotShared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	open := func(id string) *db.DB {
		d, err := sqlite.Open(ctx, sqlite.Config{ID: id, Path: filepath.Join(t.TempDir(), id+".db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
		return d
	}
	d1, d2 := open("db1"), open("db2")
	store, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	newAgent := func(id string, d *db.DB) *agent.Agent {
		a, err := agent.New(agent.Config{ID: id, Model: scripted.Reply("ok"), DB: d, MediaStorage: store})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	ts, _ := testServer(t, Config{Auth: Auth{Authenticator: rsaAuthenticator(t)}, UserIsolation: true, DBs: []*db.DB{d1, d2},
		Agents: []*agent.Agent{newAgent("x", d1), newAgent("y", d2)}, MediaStorage: store}, nil)
	as := func(user string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + rsToken(t, user)}
	}
	runWith := func(agentID, user, session string, parts ...formPart) {
		t.Helper()
		ctype, body := multipartBody(t, append(parts, formPart{name: "message", value: "hi"}, formPart{name: "session_id", value: session})...)
		h := as(user)
		h["Content-Type"] = ctype
		if res := do(t, http.MethodPost, ts.URL+"/agents/"+agentID+"/runs", bytes.NewReader(body), h); res.status != http.StatusOK {
			t.Fatalf("%s's run on %s: %d %s", user, agentID, res.status, res.body)
		}
	}

	secret := "alice's picture"
	sum := sha256.Sum256([]byte(secret))
	name := hex.EncodeToString(sum[:]) + ".png"
	runWith("x", "alice", "shared", formPart{name: "files", filename: "secret.png", value: secret})
	runWith("y", "bob", "shared")
	if res := get(t, ts.URL+"/sessions/shared/media/"+name+"?db_id=db1", as("alice")); res.status != http.StatusOK || res.body != secret {
		t.Fatalf("alice: %d %q", res.status, res.body)
	}
	if res := get(t, ts.URL+"/sessions/shared/media/"+name+"?db_id=db2", as("bob")); res.status != http.StatusNotFound || contains(res.body, secret) {
		t.Fatalf("bob's session of the same id in db2 read alice's media: %d %q", res.status, res.body)
	}

	// Before owners: an object under the session id alone, referenced by a
	// run of alice's session in db1.
	old := "an older picture"
	sum = sha256.Sum256([]byte(old))
	oldName := hex.EncodeToString(sum[:]) + ".jpg"
	key, err := media.Key("legacy", oldName)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Upload(ctx, key, strings.NewReader(old), int64(len(old)), "image/jpeg"); err != nil {
		t.Fatal(err)
	}
	ref, _ := json.Marshal(media.Reference{MediaID: oldName, StorageKey: key, SessionID: "legacy", StorageBackend: "local",
		MimeType: "image/jpeg", Size: int64(len(old)), ContentHash: hex.EncodeToString(sum[:]), MediaType: "image"})
	out := &run.Output{RunID: "r-legacy", SessionID: "legacy", AgentID: "x", UserID: "alice", Status: run.StatusCompleted,
		Messages: []model.Message{{Role: model.RoleUser, Parts: []model.Part{{Type: model.PartImage, MIMEType: "image/jpeg", MediaReference: ref}}}}}
	row, err := db.RunFromOutput(out)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := d1.SaveRun(db.WithUserScope(ctx, "alice"), &db.Session{SessionID: "legacy", SessionType: run.TypeAgent, AgentID: "x"}, row); err != nil {
		t.Fatal(err)
	}
	runWith("y", "bob", "legacy")
	if res := get(t, ts.URL+"/sessions/legacy/media/"+oldName+"?db_id=db1", as("alice")); res.status != http.StatusOK || res.body != old {
		t.Fatalf("alice's object stored before owners: %d %q", res.status, res.body)
	}
	if res := get(t, ts.URL+"/sessions/legacy/media/"+oldName+"?db_id=db2", as("bob")); res.status != http.StatusNotFound || contains(res.body, old) {
		t.Fatalf("bob read alice's object stored before owners: %d %q", res.status, res.body)
	}
	// A run of bob's naming alice's object in its text is no reference.
	runWith("y", "bob", "legacy", formPart{name: "metadata", value: `{"media_reference":` + string(ref) + `}`})
	if res := get(t, ts.URL+"/sessions/legacy/media/"+oldName+"?db_id=db2", as("bob")); res.status != http.StatusNotFound {
		t.Fatalf("bob's metadata made alice's object his: %d", res.status)
	}
	// Bob deleting his session of that id deletes none of alice's objects
	// stored before owners (it deleted the id's whole older directory),
	// alice deleting hers deletes the ones her runs reference.
	if res := do(t, http.MethodDelete, ts.URL+"/sessions/legacy?db_id=db2", nil, as("bob")); res.status != http.StatusNoContent {
		t.Fatalf("bob's delete: %d %s", res.status, res.body)
	}
	if res := get(t, ts.URL+"/sessions/legacy/media/"+oldName+"?db_id=db1", as("alice")); res.status != http.StatusOK || res.body != old {
		t.Fatalf("alice's object stored before owners after bob deleted his session of the same id: %d %q", res.status, res.body)
	}
	if res := do(t, http.MethodDelete, ts.URL+"/sessions/legacy?db_id=db1", nil, as("alice")); res.status != http.StatusNoContent {
		t.Fatalf("alice's delete: %d %s", res.status, res.body)
	}
	if ok, err := store.Exists(ctx, key); ok || err != nil {
		t.Errorf("alice's object stored before owners after she deleted her session: exists %v, %v", ok, err)
	}
}

// A media_reference a client sends beside an image's url is kept in its
// run's input (unknown members pass through), but the media route serves
// through a run's reference only objects of that run's owner (or of the
// layout before owners, under the session id): a reference a client
// wrote naming another owner's key reads nothing.
func TestGetSessionMedia_AClientsReferenceToAnotherOwnersObjectIs404(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := sqlite.Open(ctx, sqlite.Config{ID: "db1", Path: filepath.Join(t.TempDir(), "db1.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	store, err := local.New(filepath.Join(t.TempDir(), "media"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{ID: "x", Model: scripted.Reply("ok"), DB: d, MediaStorage: store})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Auth: Auth{Authenticator: rsaAuthenticator(t)}, UserIsolation: true, DBs: []*db.DB{d},
		Agents: []*agent.Agent{a}, MediaStorage: store}, nil)
	runAs := func(user, session string, parts ...formPart) {
		t.Helper()
		ctype, body := multipartBody(t, append(parts, formPart{name: "message", value: "hi"}, formPart{name: "session_id", value: session})...)
		h := map[string]string{"Authorization": "Bearer " + rsToken(t, user), "Content-Type": ctype}
		if res := do(t, http.MethodPost, ts.URL+"/agents/x/runs", bytes.NewReader(body), h); res.status != http.StatusOK {
			t.Fatalf("%s's run: %d %s", user, res.status, res.body)
		}
	}
	secret := "alice's picture"
	sum := sha256.Sum256([]byte(secret))
	name := hex.EncodeToString(sum[:]) + ".png"
	runAs("alice", "s-alice", formPart{name: "files", filename: "secret.png", value: secret})
	key, err := media.Owner{DB: "db1", User: "alice", Session: "s-alice"}.Key(name)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := store.Exists(ctx, key); err != nil || !ok {
		t.Fatalf("alice's object %s: %v %v", key, ok, err)
	}
	ref, _ := json.Marshal(media.Reference{MediaID: name, StorageKey: key, SessionID: "s-bob", StorageBackend: "local",
		MimeType: "image/png", Size: int64(len(secret)), ContentHash: hex.EncodeToString(sum[:]), MediaType: "image"})
	runAs("bob", "s-bob", formPart{name: "images", value: `[{"url":"https://example.com/a.png","media_reference":` + string(ref) + `}]`})
	bob := map[string]string{"Authorization": "Bearer " + rsToken(t, "bob")}
	if res := get(t, ts.URL+"/sessions/s-bob/media/"+name, bob); res.status != http.StatusNotFound || contains(res.body, secret) {
		t.Fatalf("bob read alice's object through a reference he sent: %d %q", res.status, res.body)
	}
	alice := map[string]string{"Authorization": "Bearer " + rsToken(t, "alice")}
	if res := get(t, ts.URL+"/sessions/s-alice/media/"+name, alice); res.status != http.StatusOK || res.body != secret {
		t.Fatalf("alice: %d %q", res.status, res.body)
	}
}
