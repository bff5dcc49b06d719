package run

import (
	"encoding/json"
	"strings"
	"testing"
)

// TeamTaskStateUpdated always carries tasks (a list, empty too) and
// goal_complete (false too), as Agno's TaskStateUpdatedEvent: a frontend
// rendering the task list read tasks as undefined before the first task.
// The other task events carry neither.
func TestTaskEvent_StateUpdatedAlwaysCarriesTasksAndGoal(t *testing.T) {
	no := false
	state := Event{Event: EventTeamTaskStateUpdated, RunID: "r", TaskEvent: &TaskEvent{GoalComplete: &no, Tasks: []TaskData{}}}
	b, err := json.Marshal(state)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"tasks":[]`) || !strings.Contains(string(b), `"goal_complete":false`) {
		t.Errorf("TeamTaskStateUpdated = %s, want tasks [] and goal_complete false", b)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil || back.TaskEvent == nil || back.GoalComplete == nil || *back.GoalComplete || back.Tasks == nil {
		t.Errorf("decoded %+v, %v", back.TaskEvent, err)
	}
	created := Event{Event: EventTeamTaskCreated, RunID: "r", TaskEvent: &TaskEvent{TaskID: "t1", Title: "write"}}
	if b, _ := json.Marshal(created); strings.Contains(string(b), `"tasks"`) || strings.Contains(string(b), `"goal_complete"`) {
		t.Errorf("TeamTaskCreated = %s, want neither tasks nor goal_complete", b)
	}
}
