package team

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/agent"
	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/model/scripted"
	"github.com/agentryhq/agentry/run"
)

// A streamed tasks-mode team run's TeamRunCompleted carries the task list
// in session_state (_team_tasks), as Run's result and the stored run do:
// it was built before the hook that adds it ran (and, without a database,
// the hook never ran).
func TestStream_CompletedEventSessionStateHasTheTaskList(t *testing.T) {
	t.Parallel()
	for _, withDB := range []bool{false, true} {
		var d *db.DB
		if withDB {
			d = openDB(t)
		}
		writer := mustAgent(t, agent.Config{ID: "writer", Model: scripted.Reply("a poem")})
		leader := script(call(toolCreateTask, map[string]any{"title": "Poem", "assignee": "writer"}),
			call(toolExecuteTask, map[string]any{"task_id": "t1", "member_id": "writer"}),
			call(toolMarkComplete, map[string]any{"summary": "done"}), answer("here"))
		tm := mustTeam(t, Config{ID: "st", Mode: ModeTasks, Model: leader, Members: []*agent.Agent{writer}, DB: d})
		seen := false
		for ev, err := range tm.Stream(context.Background(), run.TextInput("go")) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Event == "TeamRunCompleted" {
				seen = true
				if ev.SessionState[taskListKey] == nil {
					t.Errorf("db %v: TeamRunCompleted session_state %v has no %s", withDB, ev.SessionState, taskListKey)
				}
			}
		}
		if !seen {
			t.Errorf("db %v: no TeamRunCompleted", withDB)
		}
	}
}

// TeamRunCompleted carries the team run's member runs (member_responses),
// as Agno's event does, also when they are not stored with the run
// (store_member_responses false); it carried none.
func TestStream_CompletedEventCarriesTheMemberRuns(t *testing.T) {
	t.Parallel()
	no := false
	for _, store := range []*bool{nil, &no} {
		d := openDB(t)
		writer := mustAgent(t, agent.Config{ID: "writer", Model: scripted.Reply("a poem"), DB: d})
		leader := script(call(ToolDelegate, map[string]any{"member_id": "writer", "task": "a poem"}), answer("done"))
		tm := mustTeam(t, Config{ID: "mr", Model: leader, Members: []*agent.Agent{writer}, DB: d, StoreMemberResponses: store})
		var got []json.RawMessage
		for ev, err := range tm.Stream(context.Background(), run.TextInput("go")) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Event == "TeamRunCompleted" {
				got = ev.MemberResponses
			}
		}
		if len(got) != 1 {
			t.Fatalf("store %v: TeamRunCompleted member_responses %s, want the writer's run", store, got)
		}
		var m run.Output
		if err := json.Unmarshal(got[0], &m); err != nil || m.AgentID != "writer" || m.ContentString() != "a poem" {
			t.Errorf("store %v: member response %s (%v)", store, got[0], err)
		}
	}
}
