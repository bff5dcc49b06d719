package team

import "fmt"

// Mode is how a team's leader works with its members (Agno's TeamMode).
type Mode string

const (
	// ModeCoordinate: the leader delegates tasks to members it picks
	// (delegate_task_to_member) and answers from their results.
	ModeCoordinate Mode = "coordinate"
	// ModeRoute: the leader picks one member; that member's answer is the
	// team's answer (respond_directly).
	ModeRoute Mode = "route"
	// ModeBroadcast: the leader gives one task to every member at once
	// (delegate_task_to_members); members run concurrently and their answers
	// come back in member order.
	ModeBroadcast Mode = "broadcast"
	// ModeTasks: the leader keeps a task list (create_task,
	// update_task_status, execute_task, execute_tasks_parallel, list_tasks,
	// add_task_note, mark_all_complete) and iterates until the goal is
	// complete or MaxIterations. Tasks executed in one turn, or in one
	// execute_tasks_parallel call, run concurrently.
	ModeTasks Mode = "tasks"
)

// ParseMode reads a mode name; empty is coordinate.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeCoordinate, nil
	case ModeCoordinate, ModeRoute, ModeBroadcast, ModeTasks:
		return m, nil
	}
	return "", fmt.Errorf("team: unknown mode %q: want coordinate, route, broadcast or tasks", s)
}
