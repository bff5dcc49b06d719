package agentos

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// A streamed background run that ends at once (the in-process runner, a
// model that answers at once) is streamed from its RunStarted to its
// RunCompleted. The stream read the run's event log before asking whether
// the run was over: a run that wrote its events and ended in between was
// found over with no event stored and replayed from its row, which keeps
// no events (store_events is off): the client got the replay frame and
// nothing else, about one stream in three.
func TestBackgroundStream_FastRunIsStreamedNotReplayedEmpty(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	a, err := agent.New(agent.Config{ID: "echo", Name: "Echo", Model: scripted.Reply("done"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	var srv *Server
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}}, func(s *Server) { srv = s; s.tailCfg = testTailConfig })
	t.Cleanup(func() {
		srv.runs.stop(errServerShutdown)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.runs.wait(ctx)
	})
	for i := range 40 {
		s := openStream(t, func() (*http.Response, error) {
			return sendForm(ts.URL+"/agents/echo/runs", map[string]string{"message": "go", "background": "true", "stream": "true"}, nil)
		})
		evs, meta := s.events(t, -1)
		s.res.Body.Close()
		if len(evs) < 2 || evs[0].event != string(run.EventRunStarted) || evs[len(evs)-1].event != string(run.EventRunCompleted) {
			t.Fatalf("stream %d: frames %v then %d events", i, meta, len(evs))
		}
		checkIDs(t, evs, 0)
	}
}
