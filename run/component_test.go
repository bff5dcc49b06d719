package run_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentryhq/agentry/run"
)

func TestComponent_StampsItsKindsFields(t *testing.T) {
	t.Parallel()
	tests := []struct {
		c                     run.Component
		run, event            string
		key, idField          string
		started, done, cancel run.EventType
	}{
		{run.Component{Type: run.TypeAgent, ID: "a", Name: "A"}, `{"agent_id":"a","agent_name":"A"}`, `{"event":"RunStarted","created_at":0,"agent_id":"a","agent_name":"A"}`,
			"a", "agent_id", "RunStarted", "RunCompleted", "RunCancelled"},
		{run.Component{Type: run.TypeTeam, ID: "t", Name: "T"}, `{"team_id":"t","team_name":"T"}`, `{"event":"TeamRunStarted","created_at":0,"team_id":"t","team_name":"T"}`,
			"team:t", "team_id", "TeamRunStarted", "TeamRunCompleted", "TeamRunCancelled"},
		{run.Component{Type: run.TypeWorkflow, ID: "w", Name: "W"}, `{"workflow_id":"w","workflow_name":"W"}`, `{"event":"WorkflowStarted","created_at":0,"workflow_id":"w","workflow_name":"W"}`,
			"workflow:w", "workflow_id", "WorkflowStarted", "WorkflowCompleted", "WorkflowCancelled"},
	}
	for _, tt := range tests {
		t.Run(string(tt.c.Type), func(t *testing.T) {
			t.Parallel()
			// Stamping replaces whatever identity the run had.
			out := run.Output{AgentID: "stale", TeamName: "stale", WorkflowID: "stale"}
			tt.c.Stamp(&out)
			if b, _ := json.Marshal(&out); string(b) != tt.run {
				t.Errorf("stamped run = %s, want %s", b, tt.run)
			}
			if b, _ := json.Marshal(tt.c.Event(run.EventRunStarted)); string(b) != tt.event {
				t.Errorf("event = %s, want %s", b, tt.event)
			}
			if tt.c.Key() != tt.key || tt.c.IDField() != tt.idField {
				t.Errorf("key %q, id field %q", tt.c.Key(), tt.c.IDField())
			}
			if got := []run.EventType{tt.c.EventName(run.EventRunStarted), tt.c.EventName(run.EventRunCompleted), tt.c.EventName(run.EventRunCancelled)}; got[0] != tt.started || got[1] != tt.done || got[2] != tt.cancel {
				t.Errorf("lifecycle names = %v", got)
			}
			for _, e := range []run.EventType{run.EventRunCompleted, run.EventRunError, run.EventRunCancelled, run.EventRunPaused} {
				if !run.IsTerminal(tt.c.EventName(e)) {
					t.Errorf("%s is not terminal", tt.c.EventName(e))
				}
			}
			for _, e := range []run.EventType{run.EventRunStarted, run.EventRunContent, run.EventToolCallCompleted, run.EventStepCompleted} {
				if run.IsTerminal(tt.c.EventName(e)) {
					t.Errorf("%s is terminal", tt.c.EventName(e))
				}
			}
			if err := tt.c.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestComponent_ValidateRefusesUnknownKindsAndMissingIDs(t *testing.T) {
	t.Parallel()
	for _, c := range []run.Component{{}, {Type: "squad", ID: "x"}, {Type: run.TypeAgent}} {
		if err := c.Validate(); !errors.Is(err, run.ErrInvalidComponent) {
			t.Errorf("Validate(%+v) = %v", c, err)
		}
	}
}
