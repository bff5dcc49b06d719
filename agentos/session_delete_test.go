package agentos

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/media/s3/s3test"
	"github.com/agentryhq/agentry/run"
)

// deletedData is what a session leaves in the database and in media
// storage: an offloaded tool result (index row and file) and a media object.
type deletedData struct {
	resultID, namespace, path string
	media                     *media.Reference
}

func seedDeletedData(t *testing.T, d *db.DB, store media.Storage, sessionID, user string) deletedData {
	t.Helper()
	ctx := db.WithUserScope(context.Background(), user)
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: sessionID, SessionType: run.TypeAgent, UserID: user}); err != nil {
		t.Fatal(err)
	}
	sd := deletedData{resultID: "res-" + sessionID, namespace: "agentfs/" + sessionID, path: "results/res-" + sessionID + ".txt"}
	if _, err := d.PutFile(ctx, &db.File{Namespace: sd.namespace, Path: sd.path, Content: []byte("tool output of " + sessionID)}); err != nil {
		t.Fatal(err)
	}
	if err := d.UpsertToolResult(ctx, &db.ToolResult{ResultID: sd.resultID, Namespace: sd.namespace, Path: sd.path,
		SessionID: sessionID, UserID: user, ToolName: "fetch"}); err != nil {
		t.Fatal(err)
	}
	var err error
	sd.media, err = media.Put(context.Background(), store, media.Owner{DB: d.ID, User: user, Session: sessionID}, "image", "image/png", "p.png", []byte("png of "+sessionID))
	if err != nil {
		t.Fatal(err)
	}
	return sd
}

// left reports which of a session's data are still stored.
func (sd deletedData) left(t *testing.T, d *db.DB, store media.Storage) (row, file, object bool) {
	t.Helper()
	ctx := context.Background()
	_, err := d.GetToolResult(ctx, sd.resultID)
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		t.Fatal(err)
	}
	row = err == nil
	_, err = d.GetFile(ctx, sd.namespace, sd.path)
	if err != nil && !errors.Is(err, db.ErrNotFound) {
		t.Fatal(err)
	}
	file = err == nil
	object, err = store.Exists(ctx, sd.media.StorageKey)
	if err != nil {
		t.Fatal(err)
	}
	return row, file, object
}

func wantLeft(t *testing.T, what string, sd deletedData, d *db.DB, store media.Storage, want bool) {
	t.Helper()
	row, file, object := sd.left(t, d, store)
	if row != want || file != want || object != want {
		t.Errorf("%s: tool result row %v, file %v, media object %v; want all %v", what, row, file, object, want)
	}
}

func TestDeleteSession_DeletesItsToolResultsAndMedia_OnlyTheCallers(t *testing.T) {
	t.Parallel()
	for name, open := range sqliteAndPostgres {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := open(t)
			store, err := local.New(filepath.Join(t.TempDir(), "media"))
			if err != nil {
				t.Fatal(err)
			}
			one := seedDeletedData(t, d, store, "s-alice", "alice")
			two := seedDeletedData(t, d, store, "s-alice-2", "alice")
			three := seedDeletedData(t, d, store, "s-alice-3", "alice")
			bobs := seedDeletedData(t, d, store, "s-bob", "bob")
			ts, _ := testServer(t, Config{Auth: Auth{Authenticator: rsaAuthenticator(t)}, UserIsolation: true, DBs: []*db.DB{d}, MediaStorage: store}, nil)
			as := func(user string) map[string]string {
				return map[string]string{"Authorization": "Bearer " + rsToken(t, user), "Content-Type": "application/json"}
			}

			if res := do(t, "DELETE", ts.URL+"/sessions/s-bob", nil, as("alice")); res.status != http.StatusNotFound {
				t.Fatalf("alice deleting bob's session: %d %s", res.status, res.body)
			}
			wantLeft(t, "bob's session after alice's refused delete", bobs, d, store, true)

			if res := do(t, "DELETE", ts.URL+"/sessions/s-alice", nil, as("alice")); res.status != http.StatusNoContent {
				t.Fatalf("alice deleting her session: %d %s", res.status, res.body)
			}
			wantLeft(t, "the deleted session", one, d, store, false)
			wantLeft(t, "alice's other session", two, d, store, true)

			body := `{"session_ids":["s-alice-2","s-bob","s-alice-3","missing"],"session_types":["agent","agent","agent","agent"]}`
			if res := do(t, "DELETE", ts.URL+"/sessions", strings.NewReader(body), as("alice")); res.status != http.StatusNoContent {
				t.Fatalf("bulk delete: %d %s", res.status, res.body)
			}
			wantLeft(t, "bulk-deleted session", two, d, store, false)
			wantLeft(t, "other bulk-deleted session", three, d, store, false)
			wantLeft(t, "bob's session named in alice's bulk delete", bobs, d, store, true)
			if _, err := d.GetSession(context.Background(), "s-bob"); err != nil {
				t.Fatalf("bob's session: %v", err)
			}
		})
	}
}

// Storage is not in the database's transaction: when it is down after the
// rows are deleted, the request must not answer 204 as if all were gone.
// It answers 503, and the same DELETE sent again (the session row is gone)
// finishes the media instead of answering 404; another user's DELETE of
// that id stays a 404 and deletes nothing.
func TestDeleteSession_StorageDownIs503AndTheSameDeleteFinishes(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	store, proxy := s3test.Proxied(t, 0)
	sd := seedDeletedData(t, d, store, "s-alice", "alice")
	ts, logs := testServer(t, Config{Auth: Auth{Authenticator: rsaAuthenticator(t)}, UserIsolation: true, DBs: []*db.DB{d}, MediaStorage: store}, nil)
	as := func(user string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + rsToken(t, user)}
	}

	proxy.Cut()
	res := do(t, "DELETE", ts.URL+"/sessions/s-alice", nil, as("alice"))
	if res.status != http.StatusServiceUnavailable || res.detail(t) != detailMediaLeft {
		t.Fatalf("delete with storage down: %d %s", res.status, res.body)
	}
	if !strings.Contains(logs.String(), "session deleted but its media were not") {
		t.Fatalf("no error logged:\n%s", logs.String())
	}
	proxy.Restore()
	row, file, object := sd.left(t, d, store)
	if row || file || !object {
		t.Fatalf("after the failed media delete: row %v, file %v, object %v; want the rows gone and the object left", row, file, object)
	}
	if res := do(t, "DELETE", ts.URL+"/sessions/s-alice", nil, as("bob")); res.status != http.StatusNotFound {
		t.Fatalf("bob finishing alice's delete: %d %s", res.status, res.body)
	}
	if ok, err := store.Exists(context.Background(), sd.media.StorageKey); !ok || err != nil {
		t.Fatalf("bob's DELETE touched alice's media: %v %v", ok, err)
	}
	if res := do(t, "DELETE", ts.URL+"/sessions/s-alice", nil, as("alice")); res.status != http.StatusNoContent {
		t.Fatalf("the same DELETE again: %d %s", res.status, res.body)
	}
	wantLeft(t, "after the retry", sd, d, store, false)
	if res := do(t, "DELETE", ts.URL+"/sessions/s-alice", nil, as("alice")); res.status != http.StatusNotFound {
		t.Fatalf("a third DELETE: %d %s", res.status, res.body)
	}
}
