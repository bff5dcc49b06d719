package team

import (
	"context"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// A delegation's tool execution names the member run it started
// (child_run_id), as Agno links them for its UI: in the stored team run,
// in Run's output and in the streamed ToolCallCompleted; execute_task's
// too. It was never set.
func TestDelegate_ToolExecutionNamesTheMemberRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		mode   Mode
		leader func() *scripted.Model
		tool   string
	}{
		{ModeCoordinate, func() *scripted.Model {
			return script(call(ToolDelegate, map[string]any{"member_id": "writer", "task": "a poem"}), answer("done"))
		}, ToolDelegate},
		{ModeTasks, func() *scripted.Model {
			return script(call(toolCreateTask, map[string]any{"title": "Poem", "assignee": "writer"}),
				call(toolExecuteTask, map[string]any{"task_id": "t1", "member_id": "writer"}),
				call(toolMarkComplete, map[string]any{"summary": "done"}), answer("here"))
		}, toolExecuteTask},
	} {
		d := openDB(t)
		writer := mustAgent(t, agent.Config{ID: "writer", Model: scripted.Reply("a poem"), DB: d})
		tm := mustTeam(t, Config{ID: "t", Mode: c.mode, Model: c.leader(), Members: []*agent.Agent{writer}, DB: d})
		out, err := tm.Run(context.Background(), run.TextInput("go"))
		if err != nil || out.Status != run.StatusCompleted {
			t.Fatalf("%s: %v, %v", c.mode, out, err)
		}
		child := ""
		for _, ex := range out.Tools {
			if ex.ToolName == c.tool {
				child = ex.ChildRunID
			}
		}
		row, err := d.GetRun(context.Background(), child)
		if child == "" || err != nil || row.AgentID != "writer" || row.ParentRunID != out.RunID {
			t.Errorf("%s: %s's child_run_id %q names %+v, %v; want the writer's member run", c.mode, c.tool, child, row, err)
		}
		stored, err := d.GetRun(context.Background(), out.RunID)
		if err != nil {
			t.Fatal(err)
		}
		so, err := stored.Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, ex := range so.Tools {
			if ex.ToolName == c.tool && ex.ChildRunID != child {
				t.Errorf("%s: stored child_run_id %q, want %q", c.mode, ex.ChildRunID, child)
			}
		}
		tm = mustTeam(t, Config{ID: "t2", Mode: c.mode, Model: c.leader(), Members: []*agent.Agent{writer}, DB: d})
		seen := false
		for ev, err := range tm.Stream(context.Background(), run.TextInput("go")) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Tool != nil && ev.Tool.ToolName == c.tool && ev.Event == "TeamToolCallCompleted" {
				seen = ev.Tool.ChildRunID != ""
			}
		}
		if !seen {
			t.Errorf("%s: TeamToolCallCompleted of %s has no child_run_id", c.mode, c.tool)
		}
	}
}
