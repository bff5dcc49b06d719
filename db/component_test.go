package db_test

import (
	"encoding/json"
	"testing"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/run"
)

func TestComponentHelpers_PickTheKindsColumns(t *testing.T) {
	t.Parallel()
	agent := run.Component{Type: run.TypeAgent, ID: "x"}
	team := run.Component{Type: run.TypeTeam, ID: "x"}
	flow := run.Component{Type: run.TypeWorkflow, ID: "x"}
	rows := map[string]db.Run{
		"agent run":        {RunType: run.TypeAgent, AgentID: "x"},
		"team run":         {RunType: run.TypeTeam, TeamID: "x"},
		"workflow run":     {RunType: run.TypeWorkflow, WorkflowID: "x"},
		"team id, no type": {TeamID: "x"},
	}
	want := map[run.Component][]string{agent: {"agent run"}, team: {"team run"}, flow: {"workflow run"}}
	for c, owned := range want {
		for name, r := range rows {
			if got, exp := r.ProducedBy(c), name == owned[0]; got != exp {
				t.Errorf("%s produced by %s = %v", name, c.Type, got)
			}
		}
	}
	var f db.RunFilter
	f.ProducedBy(team)
	if f.TeamID != "x" || f.RunType != run.TypeTeam || f.AgentID != "" {
		t.Errorf("team filter = %+v", f)
	}
	f = db.RunFilter{}
	f.ProducedBy(agent)
	if f.AgentID != "x" || f.RunType != "" {
		t.Errorf("agent filter = %+v", f)
	}
	q := db.HistoryQuery{AgentID: "stale"}
	q.ProducedBy(team)
	if q.TeamID != "x" || q.AgentID != "" {
		t.Errorf("team history = %+v", q)
	}
	data := json.RawMessage(`{"team_id":"x"}`)
	s := db.Session{AgentID: "old", AgentData: json.RawMessage(`{}`), UserID: "u"}
	s.SetComponent(team, data)
	if s.SessionType != run.TypeTeam || s.TeamID != "x" || string(s.TeamData) != string(data) || s.AgentID != "" || s.AgentData != nil || s.UserID != "u" {
		t.Errorf("team session = %+v", s)
	}
	s = db.Session{}
	s.SetComponent(flow, data)
	if s.SessionType != run.TypeWorkflow || s.WorkflowID != "x" || string(s.WorkflowData) != string(data) {
		t.Errorf("workflow session = %+v", s)
	}
}
