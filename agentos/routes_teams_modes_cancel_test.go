package agentos

import (
	"context"
	"iter"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
	"github.com/agentryhq/agentry/team"
)

// stuckModel signals started, then answers only when its request's context
// ends: a member that works until it is cancelled.
type stuckModel struct {
	model.Model
	started chan struct{}
	once    sync.Once
}

func (m *stuckModel) Stream(ctx context.Context, _ *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		m.once.Do(func() { close(m.started) })
		<-ctx.Done()
		yield(nil, ctx.Err())
	}
}

func TestTeamModes_CancelRouteStopsMembersInEachMode(t *testing.T) {
	t.Parallel()
	leaders := map[team.Mode][]scripted.Turn{
		team.ModeCoordinate: {turn(team.ToolDelegate, map[string]any{"member_id": "m1", "task": "t"}), {Content: "x"}},
		team.ModeRoute:      {turn(team.ToolDelegate, map[string]any{"member_id": "m1", "task": "t"})},
		team.ModeBroadcast:  {turn(team.ToolDelegateAll, map[string]any{"task": "t"}), {Content: "x"}},
		team.ModeTasks: {turn("create_task", map[string]any{"title": "t"}),
			turn("execute_task", map[string]any{"task_id": "t1", "member_id": "m1"}), {Content: "x"}},
	}
	for mode, turns := range leaders {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			d := openTeamDB(t, filepath.Join(t.TempDir(), "agentry.db"))
			m1 := &stuckModel{Model: scripted.Reply("never"), started: make(chan struct{})}
			m2 := &stuckModel{Model: scripted.Reply("never"), started: make(chan struct{})}
			a1, _ := agent.New(agent.Config{ID: "m1", Model: m1, DB: d})
			a2, _ := agent.New(agent.Config{ID: "m2", Model: m2, DB: d})
			tm, err := team.New(team.Config{ID: "crew", Mode: mode, Model: scripted.MustNew(scripted.Config{Turns: turns}), Members: []*agent.Agent{a1, a2}, DB: d})
			if err != nil {
				t.Fatal(err)
			}
			ts, _ := testServer(t, Config{Agents: []*agent.Agent{a1, a2}, Teams: []*team.Team{tm}}, nil)
			acc := decode[map[string]any](t, postForm(t, ts.URL+"/teams/crew/runs", map[string]string{"message": "go", "background": "true", "session_id": "s"}, nil))
			runID, _ := acc["run_id"].(string)
			<-m1.started
			if mode == team.ModeBroadcast {
				<-m2.started
			}
			res := postForm(t, ts.URL+"/teams/crew/runs/"+runID+"/cancel", nil, nil)
			if res.status != 200 || decode[map[string]any](t, res)["status"] != "CANCELLED" {
				t.Fatalf("cancel = %d %s", res.status, res.body)
			}
			members := 1
			if mode == team.ModeBroadcast {
				members = 2
			}
			if n := countRuns(t, d, db.RunFilter{SessionID: "s", ParentRunID: runID, Statuses: []run.Status{run.StatusCancelled}}); n != members {
				t.Errorf("%d CANCELLED member rows, want %d", n, members)
			}
			if n := countRuns(t, d, db.RunFilter{SessionID: "s", Statuses: []run.Status{run.StatusRunning, run.StatusCompleted}}); n != 0 {
				t.Errorf("%d rows still running or completed", n)
			}
		})
	}
}
