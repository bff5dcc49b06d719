package agentos

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// heldAgent is an agent whose run calls tool "hold", which signals started
// and returns when release closes (or the run's context ends), then answers.
func heldAgent(t *testing.T, d *db.DB) (a *agent.Agent, started, release chan struct{}) {
	t.Helper()
	started, release = make(chan struct{}, 1), make(chan struct{})
	hold := tool.MustFunc(tool.FuncConfig{Name: "hold", Description: "Holds the run."},
		func(ctx context.Context, _ struct{}) (string, error) {
			started <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
			}
			return "held", nil
		})
	m := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{ToolCalls: []scripted.ToolCall{{Name: "hold"}}}, {Content: "the secret answer"}}})
	a, err := agent.New(agent.Config{ID: "held", Model: m, DB: d, Tools: []tool.Tool{hold}})
	if err != nil {
		t.Fatal(err)
	}
	return a, started, release
}

// Deleting the session of a background run that is executing leaves
// nothing of it behind once the run is over: the run's end does not store
// the session or the run again, and its job is gone.
func TestDeleteSession_BackgroundRunInFlightResurrectsNothing(t *testing.T) {
	for _, durable := range []bool{true, false} {
		name := map[bool]string{true: "durable", false: "in-process"}[durable]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d := testdbs.SQLite(t)
			a, started, release := heldAgent(t, d)
			cfg := Config{Agents: []*agent.Agent{a}}
			if durable {
				cfg.Queue = &queue.Config{PollInterval: 20 * time.Millisecond}
			}
			var srv *Server
			ts, _ := testServer(t, cfg, func(s *Server) { srv = s })
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				srv.Close(ctx)
			})
			acc := accepted(t, postForm(t, ts.URL+"/agents/held/runs", map[string]string{"message": "hi", "background": "true"}, nil))
			<-started
			// A run's end skips an unchanged session write within the
			// second the session was written in: let that second pass, so
			// that the run's end writes its session as it does most often.
			sess, err := d.GetSession(context.Background(), acc.SessionID)
			if err != nil {
				t.Fatal(err)
			}
			for time.Now().Unix() <= sess.UpdatedAt {
				time.Sleep(10 * time.Millisecond)
			}
			if res := do(t, http.MethodDelete, ts.URL+"/sessions/"+acc.SessionID, nil, nil); res.status != http.StatusNoContent {
				t.Fatalf("delete: %d %s", res.status, res.body)
			}
			close(release)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if !srv.runs.wait(ctx) {
				t.Fatal("the run did not end")
			}
			if durable {
				// The queue records the attempt's end after its handler
				// returned: stop it so that everything it does is done.
				if err := srv.queue.Stop(ctx); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := d.GetSession(context.Background(), acc.SessionID); !errors.Is(err, db.ErrNotFound) {
				t.Errorf("deleted session read back: %v", err)
			}
			if _, err := d.GetRun(context.Background(), acc.RunID); !errors.Is(err, db.ErrNotFound) {
				t.Errorf("deleted run read back: %v", err)
			}
		})
	}
}

// A run of the session that does not stop in time (here: its CANCELLED
// row cannot be written yet) makes the DELETE a 503 that deletes nothing;
// the same DELETE once the run ended deletes everything.
func TestDeleteSession_RunNotStoppingIs503AndDeletesNothing(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	d := db.New("stalling", stallingDriver{Driver: testdbs.SQLite(t).Driver(), release: release})
	slow := scripted.MustNew(scripted.Config{Latency: time.Minute, Turns: []scripted.Turn{{Content: "late"}}})
	a, err := agent.New(agent.Config{ID: "slow", Model: slow, DB: d})
	if err != nil {
		t.Fatal(err)
	}
	var srv *Server
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}}, func(s *Server) { srv, s.cancelTimeout = s, 50*time.Millisecond })
	acc := accepted(t, postForm(t, ts.URL+"/agents/slow/runs", map[string]string{"message": "hi", "background": "true"}, nil))
	waitStatus(t, d, acc.RunID, run.StatusRunning)
	res := do(t, http.MethodDelete, ts.URL+"/sessions/"+acc.SessionID, nil, nil)
	if res.status != http.StatusServiceUnavailable || res.detail(t) != detailRunsStopping {
		t.Fatalf("delete while the run cannot stop: %d %s", res.status, res.body)
	}
	if _, err := d.GetSession(context.Background(), acc.SessionID); err != nil {
		t.Fatalf("the session was deleted: %v", err)
	}
	close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !srv.runs.wait(ctx) {
		t.Fatal("the run did not end")
	}
	if res := do(t, http.MethodDelete, ts.URL+"/sessions/"+acc.SessionID, nil, nil); res.status != http.StatusNoContent {
		t.Fatalf("second delete: %d %s", res.status, res.body)
	}
	for _, err := range []error{func() error { _, err := d.GetSession(ctx, acc.SessionID); return err }(),
		func() error { _, err := d.GetRun(ctx, acc.RunID); return err }()} {
		if !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("left after the second delete: %v", err)
		}
	}
}

// DELETE /sessions takes Agno's session_types: one type per listed
// session (same length, else Agno's 400), each agent, team or workflow
// (else 422); a listed session is deleted only when it has its entry's
// type. Without session_types every listed session is deleted.
func TestDeleteSessionList_SessionTypes(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	a, err := agent.New(agent.Config{ID: "echo", Model: scripted.Reply("ok"), DB: d})
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}}, nil)
	ctx := context.Background()
	for id, typ := range map[string]run.Type{"sa": run.TypeAgent, "st": run.TypeTeam, "sw": run.TypeWorkflow, "sa2": run.TypeAgent} {
		s := db.Session{SessionID: id, SessionType: typ}
		switch typ {
		case run.TypeAgent:
			s.AgentID = "echo"
		case run.TypeTeam:
			s.TeamID = "crew"
		case run.TypeWorkflow:
			s.WorkflowID = "flow"
		}
		if _, err := d.UpsertSession(ctx, &s); err != nil {
			t.Fatal(err)
		}
	}
	left := func(id string) bool {
		_, err := d.GetSession(ctx, id)
		if err != nil && !errors.Is(err, db.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	del := func(body string) response {
		return do(t, http.MethodDelete, ts.URL+"/sessions", strings.NewReader(body), map[string]string{"Content-Type": "application/json"})
	}
	if res := del(`{"session_ids":["sa","st"],"session_types":["agent"]}`); res.status != http.StatusBadRequest {
		t.Fatalf("lengths differ: %d %s", res.status, res.body)
	}
	if res := del(`{"session_ids":["sa"],"session_types":["agents"]}`); res.status != http.StatusUnprocessableEntity {
		t.Fatalf("unknown type: %d %s", res.status, res.body)
	}
	if !left("sa") || !left("st") {
		t.Fatal("a refused delete deleted sessions")
	}
	// st is a team session listed as an agent's: kept.
	if res := del(`{"session_ids":["sa","st","sw"],"session_types":["agent","agent","workflow"]}`); res.status != http.StatusNoContent {
		t.Fatalf("typed delete: %d %s", res.status, res.body)
	}
	for id, want := range map[string]bool{"sa": false, "st": true, "sw": false, "sa2": true} {
		if left(id) != want {
			t.Errorf("session %s left %v, want %v", id, left(id), want)
		}
	}
	if res := del(`{"session_ids":["st","sa2"]}`); res.status != http.StatusNoContent || left("st") || left("sa2") {
		t.Fatalf("untyped delete: %d %s; st left %v, sa2 left %v", res.status, res.body, left("st"), left("sa2"))
	}
}
