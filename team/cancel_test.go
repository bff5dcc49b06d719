package team

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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

// TestCancel_AMemberRunCancelledCancelsTheTeamRun: a member run cancelled
// on its own (its agent's CancelRun, as AgentOS's cancel route does for the
// member's run id) cancels the team run waiting for it, as Agno's
// delegation raises the member's cancellation: the leader neither goes on
// nor answers (in route mode the leader never answers), and a member team
// cancelled so cancels its parent.
func TestCancel_AMemberRunCancelledCancelsTheTeamRun(t *testing.T) {
	t.Parallel()
	leaders := map[string]func() *scripted.Model{
		"coordinate": func() *scripted.Model {
			return script(call(ToolDelegate, map[string]any{"member_id": "m1", "task": "work"}), answer("the leader went on"))
		},
		"route": func() *scripted.Model {
			return script(call(ToolDelegate, map[string]any{"member_id": "m1", "task": "work"}), answer("the leader went on"))
		},
		"broadcast": func() *scripted.Model {
			return script(call(ToolDelegateAll, map[string]any{"task": "work"}), answer("the leader went on"))
		},
		"tasks": func() *scripted.Model {
			return script(call(toolCreateTask, map[string]any{"title": "work", "assignee": "m1"}),
				call(toolExecuteTasks, map[string]any{"task_ids": []string{"t1"}}),
				call(toolMarkComplete, map[string]any{"summary": "done"}), answer("the leader went on"))
		},
		"nested": func() *scripted.Model {
			return script(call(ToolDelegate, map[string]any{"member_id": "sub", "task": "work"}), answer("the leader went on"))
		},
	}
	for name, leader := range leaders {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", name, stream), func(t *testing.T) {
				t.Parallel()
				d := openDB(t)
				m1 := newBlocking()
				a1 := mustAgent(t, agent.Config{ID: "m1", Model: m1, DB: d})
				a2 := mustAgent(t, agent.Config{ID: "m2", Model: scripted.Reply("m2 done"), DB: d})
				lead := &recorder{Model: leader()}
				cfg := Config{ID: "team", Model: lead, Members: []*agent.Agent{a1, a2}, DB: d}
				switch name {
				case "route", "broadcast", "tasks":
					cfg.Mode = Mode(name)
				case "nested":
					sub := mustTeam(t, Config{ID: "sub", Model: script(call(ToolDelegate, map[string]any{"member_id": "m1", "task": "work"}), answer("sub went on")),
						Members: []*agent.Agent{a1, a2}, DB: d})
					cfg.Members, cfg.Teams = nil, []*Team{sub}
				}
				tm := mustTeam(t, cfg)
				// The member's RunStarted names its run; m1's model then
				// waits until that run is cancelled.
				var once sync.Once
				onEvent := func(e run.Event) {
					if e.Event == run.EventRunStarted && e.AgentID == "m1" {
						once.Do(func() {
							go func() {
								<-m1.started
								if !a1.CancelRun(e.RunID) {
									t.Error("the member's CancelRun did not find its run")
								}
							}()
						})
					}
				}
				runID := fmt.Sprintf("member-cancelled-%s-%v", name, stream) // run ids are the process's
				var out *run.Output
				var err error
				if stream {
					for ev, serr := range tm.Stream(context.Background(), run.TextInput("go"), agent.WithRunID(runID), agent.WithSessionID("s")) {
						if serr != nil {
							err = serr
							continue
						}
						onEvent(ev)
					}
					row, gerr := d.GetRun(context.Background(), runID)
					if gerr != nil {
						t.Fatal(gerr)
					}
					out, _ = row.Output()
				} else {
					out, err = tm.Run(context.Background(), run.TextInput("go"), agent.WithRunID(runID), agent.WithSessionID("s"), agent.WithEventFunc(onEvent))
					if !errors.Is(err, context.Canceled) || !errors.Is(err, ErrMemberCancelled) {
						t.Errorf("Run's error = %v, want context.Canceled and ErrMemberCancelled", err)
					}
				}
				if out.Status != run.StatusCancelled {
					t.Fatalf("team run ended %s (%v), want CANCELLED: content %q", out.Status, err, out.ContentString())
				}
				asks := 1 // the delegation
				if name == "tasks" {
					asks = 2 // create_task, then execute_tasks_parallel
				}
				if n := len(lead.requests()); n != asks {
					t.Errorf("the leader was asked %d times, want %d: it went on after its member's run was cancelled", n, asks)
				}
				if !strings.Contains(out.ContentString(), "member m1's run") && !strings.Contains(out.ContentString(), "member sub's run") {
					t.Errorf("the cancelled team run's content %q does not say a member's run was cancelled", out.ContentString())
				}
				for _, r := range rowsOf(t, d, "s") {
					if r.AgentID != "m2" && r.Status != run.StatusCancelled {
						t.Errorf("row %s (%s%s) is %s, want CANCELLED", r.RunID, r.AgentID, r.TeamID, r.Status)
					}
				}
			})
		}
	}
}
