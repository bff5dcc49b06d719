package team

import (
	"context"
	"testing"

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
