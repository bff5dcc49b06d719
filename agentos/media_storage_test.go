package agentos

import (
	"bytes"
	"context"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/memory"
	"github.com/agentryhq/agentry/media"
	"github.com/agentryhq/agentry/media/local"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// Media of a session whose agent has its own media_storage are served from
// that storage, not the server-wide one.
func TestGetSessionMedia_ServesFromTheComponentsOwnStorage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := db.New("db", memory.New())
	if _, err := d.UpsertSession(ctx, &db.Session{SessionID: "s", SessionType: run.TypeAgent, AgentID: "viewer"}); err != nil {
		t.Fatal(err)
	}
	own, err := local.New(filepath.Join(t.TempDir(), "own"))
	if err != nil {
		t.Fatal(err)
	}
	server, err := local.New(filepath.Join(t.TempDir(), "server"))
	if err != nil {
		t.Fatal(err)
	}
	img := bytes.Repeat([]byte{0xff, 0xd8, 'y'}, 500)
	ref, err := media.Put(ctx, own, media.Owner{DB: d.ID, Session: "s"}, "image", "image/jpeg", "a.jpg", img)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{ID: "viewer", Model: scripted.Reply("x"), DB: d, MediaStorage: own})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{DBs: []*db.DB{d}, Agents: []*agent.Agent{a}, MediaStorage: server}, nil)
	if res := get(t, ts.URL+"/sessions/s/media/"+ref.MediaID, nil); res.status != http.StatusOK || res.body != string(img) {
		t.Fatalf("status %d, %d bytes", res.status, len(res.body))
	}
}
