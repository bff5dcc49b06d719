package db

import (
	"encoding/json"

	"github.com/agentryhq/agentry/run"
)

// The rows keep a component's id in one of three columns (agent_id, team_id,
// workflow_id) chosen by its kind; these helpers are the one place that
// chooses, so that callers holding a run.Component never switch on its kind.

// SetComponent makes s the session of component c, whose agent_data,
// team_data or workflow_data is data. A team session keeps no agent id or
// data (its leader is not an agent of its own); other fields are left as
// they are.
func (s *Session) SetComponent(c run.Component, data json.RawMessage) {
	s.SessionType = c.Type
	switch c.Type {
	case run.TypeTeam:
		s.TeamID, s.TeamData, s.AgentID, s.AgentData = c.ID, data, "", nil
	case run.TypeWorkflow:
		s.WorkflowID, s.WorkflowData = c.ID, data
	default:
		s.AgentID, s.AgentData = c.ID, data
	}
}

// ProducedBy reports whether the run is c's own run: for a team or a
// workflow, a run of that type with its id; for an agent, a run with its
// agent id (a team's member runs are agent runs of the member).
func (r *Run) ProducedBy(c run.Component) bool {
	switch c.Type {
	case run.TypeTeam:
		return r.RunType == run.TypeTeam && r.TeamID == c.ID
	case run.TypeWorkflow:
		return r.RunType == run.TypeWorkflow && r.WorkflowID == c.ID
	}
	return r.AgentID == c.ID
}

// ProducedBy restricts the filter to c's own runs (see Run.ProducedBy).
func (f *RunFilter) ProducedBy(c run.Component) {
	switch c.Type {
	case run.TypeTeam:
		f.TeamID, f.RunType = c.ID, run.TypeTeam
	case run.TypeWorkflow:
		f.WorkflowID, f.RunType = c.ID, run.TypeWorkflow
	default:
		f.AgentID = c.ID
	}
}

// ProducedBy restricts the history to c's own runs: an agent's or a team's
// (workflows keep no model history: every run of the session is kept).
func (q *HistoryQuery) ProducedBy(c run.Component) {
	switch c.Type {
	case run.TypeTeam:
		q.AgentID, q.TeamID = "", c.ID
	case run.TypeAgent:
		q.AgentID, q.TeamID = c.ID, ""
	}
}
