package agentos

import (
	"context"
	"iter"
	"net/http"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db/dbtest/testdbs"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// heldModel answers once release is closed, whatever its context says (a
// provider call that does not honour cancellation).
type heldModel struct {
	model.Model
	called  chan struct{}
	release chan struct{}
}

func (m *heldModel) Invoke(ctx context.Context, req *model.Request) (*model.Response, error) {
	m.called <- struct{}{}
	<-m.release
	return m.Model.Invoke(context.WithoutCancel(ctx), req)
}

func (m *heldModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	m.called <- struct{}{}
	<-m.release
	return m.Model.Stream(context.WithoutCancel(ctx), req)
}

// A durable run cancelled while its model call is under way, whose model
// then asks for a tool that needs confirmation: the run must not be left
// paused with its cancel answered 202 (the cancel lost, the run waiting
// for a person). The route answers 200 with the run CANCELLED.
func TestCancelRun_DurableRunThatPausesAfterTheCancelEndsCancelled(t *testing.T) {
	t.Parallel()
	d := testdbs.SQLite(t)
	del := tool.MustFunc(tool.FuncConfig{Name: "delete_file", Description: "Deletes.", RequiresConfirmation: true},
		func(context.Context, struct{}) (string, error) { return "gone", nil })
	m := &heldModel{Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{turn("delete_file", map[string]any{}), {Content: "done"}}}),
		called: make(chan struct{}, 1), release: make(chan struct{})}
	a, err := agent.New(agent.Config{ID: "hitl", DB: d, Tools: []tool.Tool{del}, Model: m})
	if err != nil {
		t.Fatal(err)
	}
	qc := queue.Config{PollInterval: 20 * time.Millisecond, LockGrace: 2 * time.Second}
	var srv *Server
	ts, _ := testServer(t, Config{Agents: []*agent.Agent{a}, Queue: &qc}, func(s *Server) { srv = s; s.cancelTimeout = 3 * time.Second })
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Close(ctx)
	})
	acc := accepted(t, postForm(t, ts.URL+"/agents/hitl/runs", map[string]string{"message": "delete it", "background": "true"}, nil))
	<-m.called
	go func() {
		time.Sleep(200 * time.Millisecond)
		close(m.release)
	}()
	res := do(t, http.MethodPost, ts.URL+"/agents/hitl/runs/"+acc.RunID+"/cancel", nil, nil)
	if res.status != http.StatusOK {
		t.Errorf("cancel %d %s", res.status, res.body)
	}
	if st := storedStatus(d, acc.RunID); st != run.StatusCancelled {
		t.Errorf("run %s after the cancel", st)
	}
}
