package agentos

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/sqlite"
	"github.com/agentryhq/agentry/internal/groupcommit"
	"github.com/agentryhq/agentry/model/scripted"
)

// aloneSeen is a SQLite driver that records, per run id, whether the
// context of the run's write was marked groupcommit.Alone.
type aloneSeen struct {
	db.Driver
	saver db.RunSaver
	mu    sync.Mutex
	alone map[string]bool
}

func (a *aloneSeen) SaveRun(ctx context.Context, s *db.Session, r *db.Run) (*db.Session, *db.Run, error) {
	a.mu.Lock()
	a.alone[r.RunID] = groupcommit.IsAlone(ctx)
	a.mu.Unlock()
	return a.saver.SaveRun(ctx, s, r)
}

// A streamed run's write reaches the store marked to commit alone (not in
// SQLite's group commit, whose wake-ups delay other runs' first events); a
// non-streamed run's joins the group.
func TestStreamedRunWritesAlone(t *testing.T) {
	t.Parallel()
	real, err := sqlite.Open(context.Background(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agentry.db"), ID: "db"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = real.Close() })
	seen := &aloneSeen{Driver: real.Driver(), saver: real.Driver().(db.RunSaver), alone: map[string]bool{}}
	a, err := agent.New(agent.Config{ID: "a1", Model: scripted.Reply("hi"), DB: db.New("db", seen)})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}}, nil)
	for _, stream := range []bool{true, false} {
		form := "message=hello&stream=false"
		if stream {
			form = "message=hello&stream=true"
		}
		res := do(t, http.MethodPost, ts.URL+"/agents/a1/runs", strings.NewReader(form),
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
		if res.status != http.StatusOK {
			t.Fatalf("stream=%v: status %d: %s", stream, res.status, res.body)
		}
		seen.mu.Lock()
		n, alone := 0, false
		for _, v := range seen.alone {
			n++
			alone = v
		}
		clear(seen.alone)
		seen.mu.Unlock()
		if n != 1 || alone != stream {
			t.Errorf("stream=%v: %d run writes, alone %v; want 1, alone %v", stream, n, alone, stream)
		}
	}
}
