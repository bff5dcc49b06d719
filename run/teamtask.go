package run

import (
	"encoding/json"

	"github.com/agentryhq/agentry/internal/lossless"
)

// Team events of tasks mode (Agno's TeamRunEvent task_* names). They exist
// only for teams, so they are spelled in full.
const (
	EventTeamTaskIterationStarted   EventType = "TeamTaskIterationStarted"
	EventTeamTaskIterationCompleted EventType = "TeamTaskIterationCompleted"
	EventTeamTaskStateUpdated       EventType = "TeamTaskStateUpdated"
	EventTeamTaskCreated            EventType = "TeamTaskCreated"
	EventTeamTaskUpdated            EventType = "TeamTaskUpdated"
)

// TaskEvent holds the members of the TeamTask* events, flattened into the
// event's JSON as Agno writes them (iteration, max_iterations, task_id,
// title, status, previous_status, tasks, goal_complete, …).
type TaskEvent struct {
	Iteration     int `json:"iteration,omitempty"`
	MaxIterations int `json:"max_iterations,omitempty"`

	TaskID         string   `json:"task_id,omitempty"`
	Title          string   `json:"title,omitempty"`
	Description    string   `json:"description,omitempty"`
	Assignee       string   `json:"assignee,omitempty"`
	Status         string   `json:"status,omitempty"`
	PreviousStatus string   `json:"previous_status,omitempty"`
	Dependencies   []string `json:"dependencies,omitempty"`
	Result         string   `json:"result,omitempty"`

	TaskSummary string `json:"task_summary,omitempty"`
	// GoalComplete and Tasks are TeamTaskStateUpdated's, which always
	// carries them (false, an empty list) as Agno's does: a frontend reads
	// tasks as a list. Nil leaves them out of the other task events.
	GoalComplete      *bool      `json:"goal_complete,omitempty"`
	Tasks             []TaskData `json:"tasks,omitzero"`
	CompletionSummary string     `json:"completion_summary,omitempty"`
}

// TaskData is one task of a team's task list as TeamTaskStateUpdated lists
// it (Agno's TaskData). Stored members it does not model are kept in Extra.
type TaskData struct {
	ID           string   `json:"id"`
	Title        string   `json:"title"`
	Description  string   `json:"description"`
	Status       string   `json:"status"`
	Assignee     *string  `json:"assignee"`
	Dependencies []string `json:"dependencies"`
	Result       *string  `json:"result"`

	// Extra keeps stored members the fields above do not hold.
	Extra map[string]json.RawMessage `json:"-"`
}

type taskData TaskData

// MarshalJSON writes the task with Extra.
func (d TaskData) MarshalJSON() ([]byte, error) {
	return lossless.Marshal((*taskData)(&d), d.Extra)
}

// UnmarshalJSON reads a stored task, keeping what it does not model in Extra.
func (d *TaskData) UnmarshalJSON(b []byte) error {
	var v taskData
	extra, err := lossless.Unmarshal(b, &v)
	if err != nil {
		return err
	}
	v.Extra = extra
	*d = TaskData(v)
	return nil
}
