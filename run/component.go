package run

import (
	"errors"
	"fmt"
)

// Component says which component produced a run: its kind (the run_type),
// id and name. Whoever composes a component gives it its identity (a team
// gives its leader the team's), and everything the component stores or
// emits is stamped from it: the run's agent, team or workflow fields, its
// events' names and ids, its session's type and id.
//
// This is the one place that maps a kind to Agno's field and event names;
// code elsewhere asks the Component instead of switching on the kind.
type Component struct {
	Type Type
	ID   string
	Name string
}

// ErrInvalidComponent is wrapped by Component.Validate's errors.
var ErrInvalidComponent = errors.New("run: invalid component")

// Validate reports an unknown kind or a missing id.
func (c Component) Validate() error {
	switch c.Type {
	case TypeAgent, TypeTeam, TypeWorkflow:
	default:
		return fmt.Errorf("%w: type %q: want agent, team or workflow", ErrInvalidComponent, c.Type)
	}
	if c.ID == "" {
		return fmt.Errorf("%w: %s without an id", ErrInvalidComponent, c.Type)
	}
	return nil
}

// Key names the component uniquely among all components of a process (and
// in idempotent run ids, which must not change): an agent's bare id, else
// "team:<id>" or "workflow:<id>", so an agent and a team sharing an id stay
// apart.
func (c Component) Key() string {
	if c.Type == TypeAgent {
		return c.ID
	}
	return string(c.Type) + ":" + c.ID
}

// IDField is the name of the field that holds the component's id in
// run_data, events and session data: agent_id, team_id or workflow_id.
func (c Component) IDField() string {
	switch c.Type {
	case TypeTeam:
		return "team_id"
	case TypeWorkflow:
		return "workflow_id"
	}
	return "agent_id"
}

// Stamp writes the component's id and name into the run's fields for its
// kind and clears the other kinds' (a team leader's run carries no agent id).
func (c Component) Stamp(o *Output) {
	o.AgentID, o.AgentName, o.TeamID, o.TeamName, o.WorkflowID, o.WorkflowName = "", "", "", "", "", ""
	switch c.Type {
	case TypeTeam:
		o.TeamID, o.TeamName = c.ID, c.Name
	case TypeWorkflow:
		o.WorkflowID, o.WorkflowName = c.ID, c.Name
	default:
		o.AgentID, o.AgentName = c.ID, c.Name
	}
}

// workflowEvents are the workflow's names of the run lifecycle events.
var workflowEvents = map[EventType]EventType{
	EventRunStarted:   EventWorkflowStarted,
	EventRunCompleted: EventWorkflowCompleted,
	EventRunError:     EventWorkflowError,
	EventRunCancelled: EventWorkflowCancelled,
	EventRunPaused:    EventWorkflowPaused,
}

// EventName is the name an event of an agent's vocabulary (RunStarted,
// ToolCallStarted, …) has when this component emits it: unchanged for an
// agent, prefixed "Team" for a team (TeamRunStarted), and for a workflow
// the lifecycle names WorkflowStarted, WorkflowCompleted, WorkflowError,
// WorkflowCancelled and WorkflowPaused (other names unchanged).
func (c Component) EventName(t EventType) EventType {
	switch c.Type {
	case TypeTeam:
		return TeamEvent(t)
	case TypeWorkflow:
		if w, ok := workflowEvents[t]; ok {
			return w
		}
	}
	return t
}

// Event returns an event of this component named EventName(t), carrying its
// id and name in the fields for its kind. The caller sets the rest
// (created_at, run and session ids, payload).
func (c Component) Event(t EventType) Event {
	e := Event{Event: c.EventName(t)}
	switch c.Type {
	case TypeTeam:
		e.TeamID, e.TeamName = c.ID, c.Name
	case TypeWorkflow:
		e.WorkflowID, e.WorkflowName = c.ID, c.Name
	default:
		e.AgentID, e.AgentName = c.ID, c.Name
	}
	return e
}

// IsTerminal reports whether an event named t ends a run of any kind
// (RunCompleted, TeamRunError, WorkflowCancelled, RunPaused, …).
func IsTerminal(t EventType) bool {
	_, ok := terminalEvents[t]
	return ok
}

var terminalEvents = func() map[EventType]struct{} {
	m := map[EventType]struct{}{}
	for _, t := range []EventType{EventRunCompleted, EventRunError, EventRunCancelled, EventRunPaused} {
		for _, k := range []Type{TypeAgent, TypeTeam, TypeWorkflow} {
			m[Component{Type: k}.EventName(t)] = struct{}{}
		}
	}
	return m
}()
