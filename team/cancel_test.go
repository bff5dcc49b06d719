package team

import (
	"context"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// TestCancel_InEachModeStopsMembersStoredCancelled: a team run cancelled
// while its members work ends CANCELLED, and so do the member runs below it.
func TestCancel_InEachModeStopsMembersStoredCancelled(t *testing.T) {
	t.Parallel()
	leaders := map[Mode]func() *scripted.Model{
		ModeCoordinate: func() *scripted.Model {
			return script(call(ToolDelegate, map[string]any{"member_id": "m1", "task": "work"}), answer("x"))
		},
		ModeRoute: func() *scripted.Model {
			return script(call(ToolDelegate, map[string]any{"member_id": "m2", "task": "work"}))
		},
		ModeBroadcast: func() *scripted.Model {
			return script(call(ToolDelegateAll, map[string]any{"task": "work"}), answer("x"))
		},
		ModeTasks: func() *scripted.Model {
			return script(call(toolCreateTask, map[string]any{"title": "work"}),
				call(toolExecuteTask, map[string]any{"task_id": "t1", "member_id": "m1"}), answer("x"))
		},
	}
	for mode, leader := range leaders {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			d := openDB(t)
			m1, m2 := newBlocking(), newBlocking()
			a1 := mustAgent(t, agent.Config{ID: "m1", Model: m1, DB: d})
			a2 := mustAgent(t, agent.Config{ID: "m2", Model: m2, DB: d})
			tm := mustTeam(t, Config{ID: "team-" + string(mode), Mode: mode, Model: leader(), Members: []*agent.Agent{a1, a2}, DB: d})
			runID := "run-" + string(mode)
			go func() {
				started := m1.started
				if mode == ModeRoute {
					started = m2.started
				}
				<-started
				if mode == ModeBroadcast {
					<-m2.started
				}
				if !tm.CancelRun(runID) {
					t.Error("CancelRun did not find the run")
				}
			}()
			out, err := tm.Run(context.Background(), run.TextInput("go"), agent.WithRunID(runID), agent.WithSessionID("s"))
			if !errors.Is(err, context.Canceled) || out.Status != run.StatusCancelled {
				t.Fatalf("run = %v, %v", out.Status, err)
			}
			rows := rowsOf(t, d, "s")
			want := 2
			if mode == ModeBroadcast {
				want = 3
			}
			if len(rows) != want {
				t.Fatalf("%d rows, want %d", len(rows), want)
			}
			for _, r := range rows {
				if r.Status != run.StatusCancelled {
					t.Errorf("row %s (%s%s) is %s", r.RunID, r.AgentID, r.TeamID, r.Status)
				}
				if r.RunID != runID && r.ParentRunID != runID {
					t.Errorf("member row %s has parent %q", r.RunID, r.ParentRunID)
				}
			}
		})
	}
}
