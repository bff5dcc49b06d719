package queue_test

import (
	"context"
	"path"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/queue"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/tool"
)

// An agent's own saves in a background run carry no journal fence (the
// queue's job fence vouches for the attempt: db.WithRunFenced), so the job
// fence alone must refuse a superseded attempt's final save: node A's agent
// is stuck in a tool when node B takes its run over and completes it; when
// A's run ends, its save is refused with run.ErrFenced and B's row stays.
func TestTakeover_SupersededAgentRunsFinalSaveIsRefused(t *testing.T) {
	eachDriver(t, func(t *testing.T, d *db.DB) {
		started := make(chan struct{}, 4)
		wait := tool.MustFunc(tool.FuncConfig{Name: "wait", Description: "waits until the run ends"},
			func(ctx context.Context, _ struct{}) (string, error) {
				started <- struct{}{}
				<-ctx.Done()
				return "", ctx.Err()
			})
		model := scripted.MustNew(scripted.Config{Turns: []scripted.Turn{
			{ToolCalls: []scripted.ToolCall{{Name: "wait"}}},
			{Content: "done"},
		}})
		a, err := agent.New(agent.Config{ID: "a1", Name: "Stuck", Model: model, Tools: []tool.Tool{wait}, DB: d})
		if err != nil {
			t.Fatal(err)
		}
		cfg := testCfg()
		cfg.LockGrace = time.Second
		cfg.NodeID = "node-a"
		ran := make(chan error, 4)
		var qa *queue.Queue
		inner := durableHandler(&qa, a, d, nil)
		qa = openQueue(t, d, cfg, func(ctx context.Context, j *queue.Job) (run.Status, error) {
			if j.Attempt != 1 {
				return finishRun(ctx, d, j.ID, run.StatusCompleted) // node A fetched the requeued job again
			}
			st, err := inner(ctx, j)
			ran <- err
			return st, err
		})
		// Run ids are process-wide (the run registry): one per driver.
		id := "sa-" + path.Base(t.Name())
		s, r, j := pending(id, "u1")
		s.AgentID, r.AgentID, j.ComponentID = "a1", "a1", "a1"
		if _, _, err := qa.Enqueue(context.Background(), s, r, j); err != nil {
			t.Fatal(err)
		}
		select {
		case <-started:
		case err := <-ran:
			t.Fatalf("attempt 1 ended before its tool ran: %v", err)
		case <-time.After(60 * time.Second):
			t.Fatalf("attempt 1's tool never ran; job %+v", jobOf(t, qa, id))
		}
		qa.Hang() // node A hangs in the tool: its lease expires

		attemptB := takeOverOnNodeB(t, d, cfg, qa, id)
		qa.Wake() // A's heartbeat finds it superseded and cancels its run
		wantFenced(t, ran, "the end of node A's superseded agent run (its save)")
		row, err := d.GetRun(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		out, err := row.Output()
		if err != nil {
			t.Fatal(err)
		}
		if out.Status != run.StatusCompleted || out.ContentString() != "done" || len(out.Messages) != 0 {
			t.Fatalf("run after the superseded save: %s %q with %d messages; want the takeover's COMPLETED row", out.Status, out.ContentString(), len(out.Messages))
		}
		if j := jobOf(t, qa, id); j.Status != queue.StatusCompleted || int64(j.Attempt) != attemptB.Load() {
			t.Fatalf("job %+v", j)
		}
	})
}
