package agentos

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/agentryhq/agentry/db"
	"github.com/agentryhq/agentry/workflow"
)

// workflowTarget resolves {workflow_id} for the run routes. Workflow streams
// carry WorkflowStarted, StepStarted, the steps' own events, StepCompleted and
// WorkflowCompleted (or WorkflowError / WorkflowCancelled).
func (s *Server) workflowTarget(id string) (runTarget, bool) {
	w, ok := s.workflows[id]
	return w, ok
}

// stepResponse describes one step: its name and who executes it (agent,
// team, workflow or function), or for a primitive its kind and its steps.
type stepResponse struct {
	Name         string         `json:"name"`
	StepType     string         `json:"step_type,omitempty"`
	ExecutorType string         `json:"executor_type"`
	AgentID      string         `json:"agent_id,omitempty"`
	TeamID       string         `json:"team_id,omitempty"`
	Steps        []stepResponse `json:"steps,omitempty"`
}

func newStepResponses(steps []workflow.Step) []stepResponse {
	out := make([]stepResponse, 0, len(steps))
	for i := range steps {
		st := &steps[i]
		sr := stepResponse{Name: st.Name, StepType: st.Kind()}
		switch {
		case st.Runner != nil:
			c := st.Runner.Component()
			// The step's id goes in the field for its kind, as its events carry it.
			ids := c.Event("")
			sr.ExecutorType, sr.AgentID, sr.TeamID = string(c.Type), ids.AgentID, ids.TeamID
		case st.Func != nil:
			sr.ExecutorType = "function"
		default:
			sr.ExecutorType = strings.ToLower(sr.StepType)
			sr.Steps = newStepResponses(st.Children())
		}
		out = append(out, sr)
	}
	return out
}

// workflowResponse mirrors AgentOS's WorkflowResponse.
type workflowResponse struct {
	ID string `json:"id"`
	// IsComponent: a stored component (the registry), not the config file's.
	IsComponent bool           `json:"is_component"`
	Name        string         `json:"name,omitempty"`
	DBID        string         `json:"db_id,omitempty"`
	Description string         `json:"description,omitempty"`
	Steps       []stepResponse `json:"steps"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

func newWorkflowResponse(w *workflow.Workflow) workflowResponse {
	cfg := w.Config()
	resp := workflowResponse{ID: w.ID(), Name: w.Name(), Description: cfg.Description, Steps: newStepResponses(w.Steps()), Metadata: cfg.Metadata}
	if cfg.DB != nil {
		resp.DBID = cfg.DB.ID
	}
	return resp
}

// listWorkflows lists the configured workflows, then the stored ones the
// caller sees (is_component true).
func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	out := make([]workflowResponse, 0, len(s.cfg.Workflows))
	for _, wf := range s.cfg.Workflows {
		if s.mayRead(r, "workflows", wf.ID()) {
			out = append(out, newWorkflowResponse(wf))
		}
	}
	for _, st := range s.storedTargets(r.Context(), db.ComponentWorkflow) {
		if wf, ok := st.(*workflow.Workflow); ok && s.mayRead(r, "workflows", wf.ID()) {
			res := newWorkflowResponse(wf)
			res.IsComponent = true
			out = append(out, res)
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "workflow_id")
	if wf, ok := s.workflows[id]; ok {
		writeJSON(w, http.StatusOK, newWorkflowResponse(wf))
		return nil
	}
	if wf, ok := s.storedOne(r.Context(), db.ComponentWorkflow, id).(*workflow.Workflow); ok {
		res := newWorkflowResponse(wf)
		res.IsComponent = true
		writeJSON(w, http.StatusOK, res)
		return nil
	}
	return errorf(http.StatusNotFound, "Workflow not found")
}
