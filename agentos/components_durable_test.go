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
