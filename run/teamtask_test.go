package run

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentryhq/agentry/internal/jsontest"
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

// A run's stored task, loop and pause events read back with their
// TaskEvent members in TaskEvent, not only in Extra: the event itself
// (what a replay of a finished run's row streams) writes them again.
func TestTaskEvent_StoredEventsReadIntoTaskEvent(t *testing.T) {
	goal := true
	result := "done"
	events := []Event{
		{Event: EventTeamTaskCreated, CreatedAt: 1, TaskEvent: &TaskEvent{TaskID: "t1", Title: "write", Assignee: "w", Status: "pending", Dependencies: []string{"t0"}}},
		{Event: EventTeamTaskStateUpdated, CreatedAt: 1, TaskEvent: &TaskEvent{GoalComplete: &goal, Tasks: []TaskData{{ID: "t1", Title: "write", Status: "completed", Result: &result}}}},
		{Event: EventLoopIterationStarted, CreatedAt: 1, TaskEvent: &TaskEvent{Iteration: 2, MaxIterations: 3}},
		{Event: EventWorkflowPaused, CreatedAt: 1, TaskEvent: &TaskEvent{Status: string(StatusPaused)}},
	}
	b, err := json.Marshal(&Output{RunID: "r", TeamID: "t", Events: events})
	if err != nil {
		t.Fatal(err)
	}
	var back Output
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	// A task's members Agno may add are kept too.
	stored := `{"events":[{"event":"TeamTaskStateUpdated","created_at":1,"tasks":[{"id":"t1","title":"","description":"","status":"pending","assignee":null,"dependencies":[],"result":null,"priority":2.0}]}]}`
	var agno Output
	if err := json.Unmarshal([]byte(stored), &agno); err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(&agno); !strings.Contains(string(b), `"priority":2.0`) {
		t.Errorf("stored %s\nwritten back as %s", stored, b)
	}
	for i, e := range back.Events {
		want, _ := json.Marshal(events[i])
		got, _ := json.Marshal(e) // Event's own encoding: no Extra
		if d := jsontest.DiffPython(want, got); d != "" {
			t.Errorf("stored %s\nreads back as %s (TaskEvent %+v, Extra %v)", want, got, e.TaskEvent, e.Extra)
		}
	}
}

// A stored ModelRequestCompleted (Agno's, or one Agentry stored with
// StoreEvents) reads its counts into ModelRequestUsage and writes them back
// as stored.
func TestModelRequestUsage_StoredEventsRoundTrip(t *testing.T) {
	stored := `{"events":[{"event":"ModelRequestCompleted","created_at":1,"model":"gpt-4o","input_tokens":5,"output_tokens":1,` +
		`"total_tokens":6,"time_to_first_token":0.25,"reasoning_tokens":2,"cache_read_tokens":3,"cache_write_tokens":4},` +
		`{"event":"RunContent","created_at":2,"content":"x"}]}`
	var o Output
	if err := json.Unmarshal([]byte(stored), &o); err != nil {
		t.Fatal(err)
	}
	u := o.Events[0].ModelRequestUsage
	if u == nil || *u != (ModelRequestUsage{InputTokens: 5, OutputTokens: 1, TotalTokens: 6, TimeToFirstToken: 0.25, ReasoningTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}) ||
		o.Events[1].ModelRequestUsage != nil {
		t.Fatalf("events %+v, usage %+v", o.Events, u)
	}
	b, err := json.Marshal(&o)
	if err != nil {
		t.Fatal(err)
	}
	if d := jsontest.DiffPython([]byte(stored), b); d != "" {
		t.Fatalf("written back as %s: %s", b, d)
	}
}
