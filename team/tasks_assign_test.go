package team

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// An execute_task that does not run its task (blocked, or completed
// already) leaves the task's assignee as it was: the task list named as
// assignee a member that never worked on the task.
func TestTasks_ExecuteRefusedKeepsTheAssignee(t *testing.T) {
	t.Parallel()
	a := mustAgent(t, agent.Config{ID: "a", Model: scripted.Reply("done by a")})
	b := mustAgent(t, agent.Config{ID: "b", Model: scripted.Reply("done by b")})
	leader := script(
		call(toolCreateTask, map[string]any{"title": "first", "assignee": "a"}),
		call(toolCreateTask, map[string]any{"title": "second", "assignee": "a", "depends_on": []string{"t1"}}),
		call(toolExecuteTask, map[string]any{"task_id": "t2", "member_id": "b"}), // blocked
		call(toolExecuteTask, map[string]any{"task_id": "t1", "member_id": "a"}),
		call(toolExecuteTask, map[string]any{"task_id": "t1", "member_id": "b"}), // completed already
		call(toolMarkComplete, map[string]any{"summary": "s"}),
		answer("fin"))
	tm := mustTeam(t, Config{ID: "crew", Mode: ModeTasks, Model: leader, Members: []*agent.Agent{a, b}})
	out, err := tm.Run(context.Background(), run.TextInput("go"))
	if err != nil || out.Status != run.StatusCompleted {
		t.Fatalf("run %v, %v", out.Status, err)
	}
	tasks := out.SessionState[taskListKey].(map[string]any)["tasks"].([]any)
	for i, want := range []string{"a", "a"} {
		tk := tasks[i].(map[string]any)
		if tk["assignee"] != want {
			t.Errorf("task %v (%v) assignee = %v, want %s", tk["id"], tk["status"], tk["assignee"], want)
		}
	}
}

// Two calls in one turn that execute the same task (execute_task twice, or
// execute_task beside execute_tasks_parallel naming it), run concurrently
// as a turn's tool calls are: the task runs once, the other call is a tool
// error saying it is under way. Both ran it, the member's tools with it.
func TestTasks_OneTaskExecutedTwiceInATurnRunsOnce(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		second scripted.ToolCall
	}{
		{"execute_task twice", scripted.ToolCall{Name: toolExecuteTask, Args: map[string]any{"task_id": "t1", "member_id": "a"}}},
		{"beside execute_tasks_parallel", scripted.ToolCall{Name: toolExecuteTasks, Args: map[string]any{"task_ids": []string{"t1"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			member := &recorder{Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{Content: "done by a"}}, Latency: 100 * time.Millisecond})}
			a := mustAgent(t, agent.Config{ID: "a", Model: member})
			leader := script(
				call(toolCreateTask, map[string]any{"title": "first", "assignee": "a"}),
				scripted.Turn{ToolCalls: []scripted.ToolCall{{Name: toolExecuteTask, Args: map[string]any{"task_id": "t1", "member_id": "a"}}, c.second}},
				call(toolMarkComplete, map[string]any{"summary": "s"}),
				answer("fin"))
			tm := mustTeam(t, Config{ID: "crew", Mode: ModeTasks, Model: leader, Members: []*agent.Agent{a}})
			out, err := tm.Run(context.Background(), run.TextInput("go"))
			if err != nil || out.Status != run.StatusCompleted {
				t.Fatalf("run %v, %v", out.Status, err)
			}
			if n := len(member.requests()); n != 1 {
				t.Errorf("the task's member ran %d times, want once", n)
			}
			refused := 0
			for _, te := range out.Tools {
				if te.ToolCallError && strings.Contains(te.Result, "under way") {
					refused++
				}
			}
			if refused != 1 {
				t.Errorf("%d calls refused as under way, want 1: %+v", refused, out.Tools)
			}
		})
	}
}

// A task's status changed by another call of the same turn
// (update_task_status beside execute_task or execute_tasks_parallel, run
// concurrently as a turn's tool calls are) while the execution reads it:
// the execution read it outside the list's lock (a data race, seen with
// -race).
func TestTasks_StatusUpdatedBesideItsExecutionInOneTurn(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		exec scripted.ToolCall
	}{
		{"execute_task", scripted.ToolCall{Name: toolExecuteTask, Args: map[string]any{"task_id": "t1", "member_id": "a"}}},
		{"execute_tasks_parallel", scripted.ToolCall{Name: toolExecuteTasks, Args: map[string]any{"task_ids": []string{"t1"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			a := mustAgent(t, agent.Config{ID: "a", Model: scripted.MustNew(scripted.Config{Turns: []scripted.Turn{{Content: "done by a"}}, Latency: 20 * time.Millisecond})})
			update := scripted.ToolCall{Name: toolUpdateTask, Args: map[string]any{"task_id": "t1", "status": "in_progress"}}
			leader := script(
				call(toolCreateTask, map[string]any{"title": "first", "assignee": "a"}),
				scripted.Turn{ToolCalls: []scripted.ToolCall{c.exec, update, update, update}},
				call(toolMarkComplete, map[string]any{"summary": "s"}),
				answer("fin"))
			tm := mustTeam(t, Config{ID: "crew", Mode: ModeTasks, Model: leader, Members: []*agent.Agent{a}})
			out, err := tm.Run(context.Background(), run.TextInput("go"))
			if err != nil || out.Status != run.StatusCompleted {
				t.Fatalf("run %v, %v", out.Status, err)
			}
			tk := out.SessionState[taskListKey].(map[string]any)["tasks"].([]any)[0].(map[string]any)
			// Its status is the last call's (an update may end after the
			// execution), its result the member's.
			if tk["result"] != "done by a" {
				t.Errorf("task %v, want the member's answer as its result", tk)
			}
		})
	}
}
