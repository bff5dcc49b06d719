package agentos

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agentos/config"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
)

// TestComponents_BackgroundRunOfAStoredAgent: a background run of a
// stored agent goes through the durable queue; the worker resolves the
// stored agent from the job (by id, at its current version) and completes
// the run, visible to its owner only. (A restart mid-run is not covered:
// Server.Close cancels the run, so a crash needs another harness.)
func TestComponents_BackgroundRunOfAStoredAgent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentry.db")
	start := func() (*compFixture, *Server) { // one server; kept a function for a restart test
		d, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, ID: "db"})
		if err != nil {
			t.Fatal(err)
		}
		var srv *Server
		ts, _ := testServer(t, Config{UserIsolation: true, Auth: Auth{Authenticator: rsaAuthenticator(t)}, DBs: []*db.DB{d},
			Queue:      &queue.Config{PollInterval: 20 * time.Millisecond},
			Components: ComponentsConfig{Policy: config.ComponentPolicy{Providers: []string{"scripted"}}}}, func(s *Server) { srv = s })
		f := &compFixture{url: ts.URL, db: d, dir: filepath.Dir(path),
			alice: bearer(rsToken(t, "alice")), bob: bearer(rsToken(t, "bob"))}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			srv.Close(ctx)
			d.Close()
		})
		return f, srv
	}
	f, _ := start()
	slow := f.script(t, "slow", "stored and durable", "2s")
	want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "Durable", "component_id": "durable", "component_type": "agent",
		"stage": "published", "config": map[string]any{"model": slow}})), 201)
	h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for k, v := range f.alice {
		h[k] = v
	}
	acc := accepted(t, do(t, "POST", f.url+"/agents/durable/runs", strings.NewReader("message=hi&background=true"), h))
	waitStatus(t, f.db, acc.RunID, run.StatusRunning)

	g := f
	waitStatus(t, g.db, acc.RunID, run.StatusCompleted)
	res := g.send(t, g.alice, "GET", "/agents/durable/runs/"+acc.RunID+"?session_id="+acc.SessionID, "")
	want(t, res, 200, "stored and durable", `"status":"COMPLETED"`)
	want(t, g.send(t, g.bob, "GET", "/agents/durable/runs/"+acc.RunID+"?session_id="+acc.SessionID, ""), 404)
	want(t, g.send(t, g.alice, "GET", "/queue/jobs/"+acc.RunID, ""), 200, `"status":"completed"`, `"attempt":1`)
}

// TestComponents_QueuedBackgroundRunKeepsItsVersion: a background run of a
// stored agent queued while version 1 is current runs version 1 even when
// version 2 is published before a worker takes it (the job records the
// version); a run queued after that runs version 2.
func TestComponents_QueuedBackgroundRunKeepsItsVersion(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentry.db")
	d, err := sqlite.Open(context.Background(), sqlite.Config{Path: path, ID: "db"})
	if err != nil {
		t.Fatal(err)
	}
	var srv *Server
	ts, _ := testServer(t, Config{UserIsolation: true, Auth: Auth{Authenticator: rsaAuthenticator(t)}, DBs: []*db.DB{d},
		Queue:      &queue.Config{PollInterval: 20 * time.Millisecond, MaxConcurrency: 1},
		Components: ComponentsConfig{Policy: config.ComponentPolicy{Providers: []string{"scripted"}}}}, func(s *Server) { srv = s })
	f := &compFixture{url: ts.URL, db: d, dir: filepath.Dir(path), alice: bearer(rsToken(t, "alice")), bob: bearer(rsToken(t, "bob"))}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
		d.Close()
	})
	h := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	for k, v := range f.alice {
		h[k] = v
	}
	background := func(id string) backgroundAccepted {
		return accepted(t, do(t, "POST", f.url+"/agents/"+id+"/runs", strings.NewReader("message=hi&background=true"), h))
	}
	// The one worker slot is held by a slow run of another agent.
	want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "Blocker", "component_id": "blocker", "component_type": "agent",
		"stage": "published", "config": map[string]any{"model": f.script(t, "blocker", "blocked", "2s")}})), 201)
	want(t, f.send(t, f.alice, "POST", "/components", jsonBody(map[string]any{"name": "Versioned", "component_id": "versioned", "component_type": "agent",
		"stage": "published", "config": map[string]any{"model": f.script(t, "v1", "answer one", "")}})), 201, `"current_version":1`)
	blocker := background("blocker")
	waitStatus(t, f.db, blocker.RunID, run.StatusRunning)
	queued := background("versioned")
	want(t, f.send(t, f.alice, "POST", "/components/versioned/configs", jsonBody(map[string]any{"config": map[string]any{"model": f.script(t, "v2", "answer two", "")}, "stage": "published"})),
		201, `"version":2`)
	if st := storedStatus(f.db, queued.RunID); st != run.StatusPending {
		t.Fatalf("the run was %s when version 2 was published, want PENDING (queued)", st)
	}
	later := background("versioned")
	waitStatus(t, f.db, queued.RunID, run.StatusCompleted)
	waitStatus(t, f.db, later.RunID, run.StatusCompleted)
	want(t, f.send(t, f.alice, "GET", "/agents/versioned/runs/"+queued.RunID+"?session_id="+queued.SessionID, ""), 200, "answer one")
	want(t, f.send(t, f.alice, "GET", "/agents/versioned/runs/"+later.RunID+"?session_id="+later.SessionID, ""), 200, "answer two")
}
